import { sql } from 'drizzle-orm'
import { FLAG_BITS, FLAG_NAMES, flagsToNames } from '../model/flags.ts'
import type { Nsids } from '../model/nsids.ts'
import type { Database } from './client.ts'

// Read queries shared by the API, the metrics gauge and the tests. "Visible" is always
// NOT deleted AND NOT hidden: hidden accounts never leak into an answer or a count.

export interface PromptView {
  uri: string
  cid: string
  did: string
  rkey: string
  rev: string
  record: unknown
  flags: string[]
  conversation: { uri: string; exists: boolean }
  agent: { uri: string | null; exists: boolean }
  recompiles: number
  indexedAt: string
  validationError: string | null
  provenance: { source: string | null; verified: boolean; commit: string | null; rev: string }
}

export interface PromptRow {
  did: string
  rkey: string
  rev: string
  cid: string
  record: unknown
  flags: number
  recompiles: number
  indexed_at: string | Date
  validation_error: string | null
  agent_uri: string | null
  conversation_exists: boolean
  agent_exists: boolean
  content_bytes: number | null
  source: string | null
  verified: boolean
  commit_cid: string | null
}

// Lists leave out the bulky fields: the stored cut form (see schema.ts, prompts.listRecord).
const LIST_RECORD = sql.raw('p.list_record AS record')

/** Columns and joins that make a PromptView; `p` is the prompts table. */
export const promptSelect = (_nsids: Nsids, withRecord = true) => sql`
  p.did, p.rkey, p.rev, p.cid, ${withRecord ? sql`p.record` : LIST_RECORD},
  p.flags, p.recompiles, p.indexed_at, p.validation_error, p.agent_uri, p.content_bytes,
  p.source, p.verified, p.commit_cid,
  EXISTS (SELECT 1 FROM conversations c WHERE c.did = p.did AND c.rkey = p.rkey AND NOT c.deleted AND NOT c.hidden) AS conversation_exists,
  EXISTS (SELECT 1 FROM agents a WHERE a.did = p.agent_did AND a.rkey = p.agent_rkey AND NOT a.deleted AND NOT a.hidden) AS agent_exists`

export function toPromptView(row: PromptRow, nsids: Nsids): PromptView {
  return {
    uri: `at://${row.did}/${nsids.prompt}/${row.rkey}`,
    cid: row.cid,
    did: row.did,
    rkey: row.rkey,
    rev: row.rev,
    record: row.record,
    flags: flagsToNames(Number(row.flags)),
    conversation: {
      uri: `at://${row.did}/${nsids.conversation}/${row.rkey}`,
      exists: row.conversation_exists,
    },
    agent: { uri: row.agent_uri, exists: row.agent_exists },
    recompiles: Number(row.recompiles),
    indexedAt: new Date(row.indexed_at).toISOString(),
    validationError: row.validation_error,
    provenance: {
      source: row.source,
      verified: row.verified,
      commit: row.commit_cid,
      rev: row.rev,
    },
  }
}

export async function getPrompt(
  db: Database,
  nsids: Nsids,
  did: string,
  rkey: string,
): Promise<PromptView | null> {
  const rows = await db.rows<PromptRow>(sql`SELECT ${promptSelect(nsids)} FROM prompts p
    WHERE p.did = ${did} AND p.rkey = ${rkey} AND NOT p.deleted AND NOT p.hidden`)
  return rows[0] ? toPromptView(rows[0], nsids) : null
}

export type FlagCounts = Record<(typeof FLAG_NAMES)[number] | 'ok', number>

export async function countPromptsByFlag(
  db: Database,
): Promise<{ total: number; flags: FlagCounts }> {
  const cols = FLAG_NAMES.map(
    (f) => sql`count(*) FILTER (WHERE (flags & ${FLAG_BITS[f]}) <> 0)::int AS ${sql.identifier(f)}`,
  )
  const rows = await db.rows<Record<string, number>>(sql`SELECT count(*)::int AS total,
      count(*) FILTER (WHERE flags = 0)::int AS ok, ${sql.join(cols, sql`, `)}
    FROM prompts WHERE NOT deleted AND NOT hidden`)
  const r = rows[0] ?? {}
  const flags = Object.fromEntries(
    [...FLAG_NAMES, 'ok'].map((f) => [f, Number(r[f] ?? 0)]),
  ) as FlagCounts
  return { total: Number(r.total ?? 0), flags }
}

export interface IngestStatus {
  source: string | null
  cursor: number | null
  lagSeconds: number | null
  lastEventAt: string | null
}

export async function getIngestStatus(
  db: Database,
  source: string | null,
  key: string | null,
): Promise<IngestStatus> {
  const filter = source && key ? sql`WHERE source = ${source} AND key = ${key}` : sql``
  const rows = await db.rows<{
    source: string
    cursor: string | number
    last_event_us: string | number | null
  }>(
    sql`SELECT source, cursor, last_event_us FROM ingest_cursors ${filter} ORDER BY updated_at DESC LIMIT 1`,
  )
  const r = rows[0]
  if (!r) return { source, cursor: null, lagSeconds: null, lastEventAt: null }
  const lastUs = r.last_event_us == null ? null : Number(r.last_event_us)
  return {
    source: r.source,
    cursor: Number(r.cursor),
    lagSeconds: lastUs == null ? null : Math.max(0, (Date.now() * 1000 - lastUs) / 1e6),
    lastEventAt: lastUs == null ? null : new Date(lastUs / 1000).toISOString(),
  }
}

export async function getStats(
  db: Database,
  ingest: { source: string | null; key: string | null },
) {
  const [prompts, counts, status] = await Promise.all([
    countPromptsByFlag(db),
    db.rows<{ conversations: number; agents: number }>(sql`SELECT
      (SELECT count(*)::int FROM conversations WHERE NOT deleted AND NOT hidden) AS conversations,
      (SELECT count(*)::int FROM agents WHERE NOT deleted AND NOT hidden) AS agents`),
    getIngestStatus(db, ingest.source, ingest.key),
  ])
  return {
    prompts: prompts.total,
    conversations: Number(counts[0]?.conversations ?? 0),
    agents: Number(counts[0]?.agents ?? 0),
    flags: prompts.flags,
    ingest: status,
  }
}

export async function getCursor(db: Database, source: string, key: string): Promise<number | null> {
  const rows = await db.rows<{ cursor: string | number }>(
    sql`SELECT cursor FROM ingest_cursors WHERE source = ${source} AND key = ${key}`,
  )
  return rows[0] ? Number(rows[0].cursor) : null
}

/** The stored position of a source, as the last run left it. */
export async function getStoredPosition(
  db: Database,
  source: string,
  key: string,
): Promise<{ cursor: number; lastEventUs: number | null } | null> {
  const rows = await db.rows<{ cursor: string | number; last_event_us: string | number | null }>(
    sql`SELECT cursor, last_event_us FROM ingest_cursors WHERE source = ${source} AND key = ${key}`,
  )
  const r = rows[0]
  if (!r) return null
  return {
    cursor: Number(r.cursor),
    lastEventUs: r.last_event_us == null ? null : Number(r.last_event_us),
  }
}
