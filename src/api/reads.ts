import type { Database } from '../db/client.ts'
import { readDidOfHandle, readHandles } from '../db/read/accounts.ts'
import { type ChangeRow, type CurrentRecord, readRecentChanges } from '../db/read/changes.ts'
import type { FlagCounts } from '../db/read/prompts.ts'
import {
  type PromptAnswerRow,
  type PromptKey,
  type PromptListQuery,
  readPromptAnswer,
  readPromptPage,
} from '../db/read/prompts.ts'
import { readAgent, readAgentNames, readConversation } from '../db/read/records.ts'
import { readVisibleSyncStates } from '../db/read/sync-states.ts'
import { type FlagName, flagsToNames } from '../model/flags.ts'
import type { Nsids } from '../model/nsids.ts'
import { FLAGS_WITH_RECORD, flagReasons, type Reasons } from './flag-reasons.ts'
import type { Actor } from './params.ts'
import {
  type PromptListItem,
  type PromptView,
  pageOf,
  recordHead,
  toListItem,
  toPromptView,
} from './prompt-views.ts'
import { RAW_RECORD, type RawRecordAnswer } from './raw-record.ts'

// Calls the read functions of db/read/ and shapes their rows into the answers of SPEC
// section 6 (prompts through prompt-views.ts, revisions in revision-reads.ts).

/** The DID an actor names, or null when it is a handle the index does not know. */
export async function resolveActor(db: Database, actor: Actor): Promise<string | null> {
  if (actor.kind === 'did') return actor.did
  return readDidOfHandle(db, actor.handle)
}

/** Reads a prompt's answer row: the routes' batched reader (db/read/batch.ts), or one read. */
export type PromptAnswerReader = (key: PromptKey) => Promise<PromptAnswerRow | null>

/** A single prompt's answer: the view plus one sentence per flag (lists leave these out). */
export type PromptAnswer = PromptView & { reasons: Reasons }

/**
 * A single prompt's answer with the record left as its stored JSON text (raw-record.ts
 * splices it in). Only the reasons of `mismatched` and `coreMemoryDetached` read the record,
 * so only a prompt carrying one of those is parsed.
 */
export async function getPromptAnswer(
  readRow: PromptAnswerReader,
  nsids: Nsids,
  did: string,
  rkey: string,
): Promise<RawRecordAnswer<PromptAnswer> | null> {
  const row = await readRow({ did, rkey })
  if (!row) return null
  const view = toPromptView({ ...row, record: RAW_RECORD }, nsids)
  const readsRecord = view.flags.some((f) => FLAGS_WITH_RECORD.includes(f as FlagName))
  const withRecord = readsRecord ? { ...view, record: JSON.parse(row.recordJson.toString()) } : view
  const answer = { ...view, reasons: flagReasons(withRecord, row, nsids) }
  return { answer, recordJson: row.recordJson }
}

/** The same answer with the record parsed (what a caller that is not the route reads). */
export async function getPromptView(
  db: Database,
  nsids: Nsids,
  did: string,
  rkey: string,
): Promise<PromptAnswer | null> {
  const got = await getPromptAnswer((k) => readPromptAnswer(db, k.did, k.rkey), nsids, did, rkey)
  return got && { ...got.answer, record: JSON.parse(got.recordJson.toString()) }
}

export async function listPrompts(
  db: Database,
  nsids: Nsids,
  q: Omit<PromptListQuery, 'take'>,
  limit: number,
): Promise<{ items: PromptListItem[]; cursor?: string }> {
  const rows = await readPromptPage(db, { ...q, take: limit + 1 })
  return pageOf(rows, q.sort, limit, (r) => toListItem(r, nsids))
}

export interface ConversationView {
  uri: string
  cid: string
  did: string
  rkey: string
  record: unknown
  prompt: { uri: string; flags: string[] } | null
}

export async function getConversation(
  db: Database,
  nsids: Nsids,
  did: string,
  rkey: string,
): Promise<ConversationView | null> {
  const r = await readConversation(db, did, rkey)
  if (!r) return null
  return {
    ...recordHead(r, nsids.conversation),
    record: r.record,
    prompt:
      r.promptFlags == null
        ? null
        : {
            uri: `at://${r.did}/${nsids.prompt}/${r.rkey}`,
            flags: flagsToNames(Number(r.promptFlags)),
          },
  }
}

export interface AgentSummary {
  uri: string
  agent: unknown
  prompts: { total: number } & FlagCounts
}

/** Null when the agent is neither indexed (and visible) nor named by a visible prompt. */
export async function getAgentSummary(
  db: Database,
  nsids: Nsids,
  did: string,
  rkey: string,
): Promise<AgentSummary | null> {
  const { record, prompts } = await readAgent(db, did, rkey)
  if (!record && prompts.total === 0) return null
  return {
    uri: `at://${did}/${nsids.agent}/${rkey}`,
    agent: record?.record ?? null,
    prompts: { total: prompts.total, ...prompts.flags },
  }
}

export type { ChangeRow }

/**
 * One NDJSON line. Flags are names for prompts, [] for other collections, null on delete.
 * With include=record an upsert carries its record when still current, else null and
 * `superseded: true`.
 */
export function changeLine(
  r: ChangeRow,
  promptNsid: string,
  record?: CurrentRecord | null,
): string {
  const deleted = r.op === 'delete'
  const flags = deleted
    ? null
    : r.collection === promptNsid
      ? flagsToNames(Number(r.flags ?? 0))
      : []
  const line = JSON.stringify({
    seq: r.seq,
    op: r.op,
    collection: r.collection,
    uri: `at://${r.did}/${r.collection}/${r.rkey}`,
    cid: deleted ? null : r.cid,
    flags,
    // A prompt upsert's recompile anatomy (SPEC 14); null on other lines, as flags is on a
    // delete, so every line has one shape.
    changed: !deleted && r.collection === promptNsid ? (r.changed ?? null) : null,
    at: new Date(r.at).toISOString(),
  })
  if (record === undefined || deleted) return `${line}\n`
  const current = record !== null && record.cid === r.cid
  // The stored JSON text goes in as it is, without a parse and a serialization.
  const tail = current ? `,"record":${record.json}}` : ',"record":null,"superseded":true}'
  return `${line.slice(0, -1)}${tail}\n`
}

/** Verified handles of visible accounts among `dids` (at most 200 asked at once). */
export async function getHandles(
  db: Database,
  dids: Iterable<string>,
): Promise<Map<string, string>> {
  const unique = [...new Set(dids)].slice(0, 200)
  if (unique.length === 0) return new Map()
  return readHandles(db, unique)
}

/**
 * The names of `agents` (at-uri -> its record's key; at most 200 asked at once), by at-uri:
 * a visible agent record's `name`, trimmed (the UI clips it for display); agents without
 * one are absent.
 */
export async function getAgentNames(
  db: Database,
  agents: ReadonlyMap<string, { did: string; rkey: string }>,
): Promise<Map<string, string>> {
  const keys = new Map([...agents].slice(0, 200))
  const names = await readAgentNames(db, [...keys.values()])
  const out = new Map<string, string>()
  for (const [uri, k] of keys) {
    const name = names.get(`${k.did} ${k.rkey}`)?.trim()
    if (name) out.set(uri, name)
  }
  return out
}

/** The newest visible changes, newest first (withheld rows dropped, so maybe fewer). */
export async function recentChanges(db: Database, take: number): Promise<ChangeRow[]> {
  return (await readRecentChanges(db, take)).filter((r) => !r.withheld)
}

/** Visible repos by sync state, and up to `limit` DIDs of those not synchronized (oldest first). */
export async function reposOutOfSync(
  db: Database,
  limit: number,
): Promise<{ counts: Record<string, number>; dids: string[] }> {
  return readVisibleSyncStates(db, limit)
}
