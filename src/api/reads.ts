import {
  agentPromptCountsQuery,
  agentRecordQuery,
  changesQuery,
  conversationQuery,
  handleQuery,
  handlesQuery,
  type PromptListQuery,
  promptByKeyQuery,
  promptListQuery,
  promptStateQuery,
  recentChangesQuery,
  revisionsQuery,
} from '../db/api-queries.ts'
import type { Database } from '../db/client.ts'
import { type FlagEvidenceRow, flagEvidenceQuery } from '../db/flag-evidence.ts'
import { type FlagCounts, type PromptRow, type PromptView, toPromptView } from '../db/queries.ts'
import { countReposBySyncState, listUnsynchronized } from '../db/repo-chain.ts'
import type { RevisionTextRow } from '../db/revision-texts.ts'
import { FLAG_NAMES, type FlagName, flagsToNames } from '../model/flags.ts'
import type { Nsids } from '../model/nsids.ts'
import { FLAGS_WITH_EVIDENCE, flagReasons, type Reasons } from './flag-reasons.ts'
import { type Actor, encodeCursor, encodeRevCursor } from './params.ts'

// Runs the API's queries and shapes their rows into the answers of SPEC section 6.

const iso = (v: string | Date): string => new Date(v).toISOString()

/** The DID an actor names, or null when it is a handle the index does not know. */
export async function resolveActor(db: Database, actor: Actor): Promise<string | null> {
  if (actor.kind === 'did') return actor.did
  const rows = await db.read<{ did: string }>(handleQuery(actor.handle))
  return rows[0]?.did ?? null
}

/** A single prompt's answer: the view plus one sentence per flag (lists leave these out). */
export type PromptAnswer = PromptView & { reasons: Reasons }

export async function getPromptView(
  db: Database,
  nsids: Nsids,
  did: string,
  rkey: string,
): Promise<PromptAnswer | null> {
  const rows = await db.read<PromptRow>(promptByKeyQuery(did, rkey))
  if (!rows[0]) return null
  const view = toPromptView(rows[0], nsids)
  const needsEvidence = view.flags.some((f) => FLAGS_WITH_EVIDENCE.includes(f as FlagName))
  const evidence = needsEvidence
    ? ((await db.read<FlagEvidenceRow>(flagEvidenceQuery(did, rkey)))[0] ?? null)
    : null
  return { ...view, reasons: flagReasons(view, evidence, nsids) }
}

export type PromptListItem = PromptView & { contentBytes: number | null }

export async function listPrompts(
  db: Database,
  nsids: Nsids,
  q: Omit<PromptListQuery, 'take'>,
  limit: number,
): Promise<{ items: PromptListItem[]; cursor?: string }> {
  const rows = await db.read<PromptRow>(promptListQuery({ ...q, take: limit + 1 }))
  const page = rows.slice(0, limit)
  const items = page.map((r) => ({
    ...toPromptView(r, nsids),
    contentBytes: r.content_bytes == null ? null : Number(r.content_bytes),
  }))
  const last = page.at(-1)
  return rows.length > limit && last
    ? { items, cursor: encodeCursor({ rkey: last.rkey, did: last.did }) }
    : { items }
}

export interface RevisionView {
  rev: string
  cid: string
  compiledAt: string | null
  rawSystemHash: string | null
  memfsRevision: string | null
  contentHash: string | null
  seenAt: string
}

/** Null when the slot has no row or its repo is hidden; a deleted prompt keeps its history. */
export async function getRevisions(
  db: Database,
  did: string,
  rkey: string,
  beforeRev: string | null,
  limit: number,
): Promise<{ items: RevisionView[]; cursor?: string } | null> {
  const state = await db.read<{ deleted: boolean; hidden: boolean }>(promptStateQuery(did, rkey))
  if (!state[0] || state[0].hidden) return null
  const rows = await db.read<Omit<RevisionTextRow, 'text_kept'>>(
    revisionsQuery(did, rkey, beforeRev, limit + 1),
  )
  if (state[0].deleted && rows.length === 0 && beforeRev === null) return null
  const page = rows.slice(0, limit)
  const items = page.map((r) => ({
    rev: r.rev,
    cid: r.cid,
    compiledAt: r.compiled_at,
    rawSystemHash: r.raw_system_hash,
    memfsRevision: r.memfs_revision,
    contentHash: r.content_hash,
    seenAt: iso(r.seen_at),
  }))
  const last = page.at(-1)
  return rows.length > limit && last ? { items, cursor: encodeRevCursor(last.rev) } : { items }
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
  const rows = await db.read<{
    did: string
    rkey: string
    cid: string
    record: unknown
    prompt_flags: number | null
  }>(conversationQuery(did, rkey))
  const r = rows[0]
  if (!r) return null
  return {
    uri: `at://${r.did}/${nsids.conversation}/${r.rkey}`,
    cid: r.cid,
    did: r.did,
    rkey: r.rkey,
    record: r.record,
    prompt:
      r.prompt_flags == null
        ? null
        : {
            uri: `at://${r.did}/${nsids.prompt}/${r.rkey}`,
            flags: flagsToNames(Number(r.prompt_flags)),
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
  const [records, counts] = await Promise.all([
    db.read<{ record: unknown }>(agentRecordQuery(did, rkey)),
    db.read<Record<string, number>>(agentPromptCountsQuery(did, rkey)),
  ])
  const c = counts[0] ?? {}
  const total = Number(c.total ?? 0)
  if (!records[0] && total === 0) return null
  const flags = Object.fromEntries(
    [...FLAG_NAMES, 'ok'].map((f) => [f, Number(c[f] ?? 0)]),
  ) as FlagCounts
  return {
    uri: `at://${did}/${nsids.agent}/${rkey}`,
    agent: records[0]?.record ?? null,
    prompts: { total, ...flags },
  }
}

export interface ChangeRow {
  seq: number
  did: string
  collection: string
  rkey: string
  op: string
  cid: string | null
  flags: number | null
  at: string | Date
  /** Its repo is hidden now: skipped, but the reader's position moves past it. */
  withheld: boolean
}

export async function readChanges(db: Database, since: number, take: number): Promise<ChangeRow[]> {
  const rows = await db.read<ChangeRow>(changesQuery(since, take))
  return rows.map((r) => ({ ...r, seq: Number(r.seq) }))
}

/** One NDJSON line. Flags are names for prompts, [] for the other collections, null on delete. */
export function changeLine(r: ChangeRow, promptNsid: string): string {
  const deleted = r.op === 'delete'
  const flags = deleted
    ? null
    : r.collection === promptNsid
      ? flagsToNames(Number(r.flags ?? 0))
      : []
  return `${JSON.stringify({
    seq: r.seq,
    op: r.op,
    collection: r.collection,
    uri: `at://${r.did}/${r.collection}/${r.rkey}`,
    cid: deleted ? null : r.cid,
    flags,
    at: iso(r.at),
  })}\n`
}

/** Verified handles of visible accounts among `dids` (at most 200 asked at once). */
export async function getHandles(
  db: Database,
  dids: Iterable<string>,
): Promise<Map<string, string>> {
  const unique = [...new Set(dids)].slice(0, 200)
  if (unique.length === 0) return new Map()
  // The IN list has one parameter per DID: a text per count, so not a prepared statement.
  const rows = await db.rows<{ did: string; handle: string }>(handlesQuery(unique))
  return new Map(rows.map((r) => [r.did, r.handle]))
}

/** The newest visible changes, newest first (withheld rows dropped, so maybe fewer). */
export async function recentChanges(db: Database, take: number): Promise<ChangeRow[]> {
  const rows = await db.read<ChangeRow>(recentChangesQuery(take))
  return rows.filter((r) => !r.withheld).map((r) => ({ ...r, seq: Number(r.seq) }))
}

/** Tracked repos by sync state, and up to `limit` DIDs of repos not synchronized (oldest first). */
export async function reposOutOfSync(
  db: Database,
  limit: number,
): Promise<{ counts: Record<string, number>; dids: string[] }> {
  const [counts, dids] = await Promise.all([
    countReposBySyncState(db),
    listUnsynchronized(db, limit),
  ])
  return { counts, dids }
}
