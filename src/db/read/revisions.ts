import type { SQL } from 'drizzle-orm'
import type { Database } from '../client.ts'
import { sql } from '../orm.ts'
import {
  currentTextQuery,
  type RepoTextRow,
  type RevisionTextRow,
  repoTextChainsQuery,
  revisionPairQuery,
  revisionQuery,
  textChainsQuery,
} from '../revision-texts.ts'
import type { promptRevisions, prompts, revisionTexts } from '../schema.ts'

// A prompt's revision history: whether the slot is readable, pages of revisions, one
// revision with the rows its texts are rebuilt from. Raw `sql`: prepared lookups (db.read
// takes fixed-text SQL); the text statements live with their writer in revision-texts.ts.

/** A revision in a page: the row without its text bookkeeping. */
export type RevisionRow = Omit<RevisionTextRow, 'text_kept'>

/** Whether a prompt slot has a row, and whether its repo is hidden (deleted rows keep history). */
export function promptStateQuery(did: string, rkey: string): SQL {
  return sql`SELECT p.deleted, p.hidden FROM prompts p WHERE p.did = ${did} AND p.rkey = ${rkey}`
}

export async function readPromptState(db: Database, did: string, rkey: string) {
  const rows = await db.read<Pick<typeof prompts.$inferSelect, 'deleted' | 'hidden'>>(
    promptStateQuery(did, rkey),
  )
  return rows[0] ?? null
}

export function revisionsQuery(
  did: string,
  rkey: string,
  beforeRev: string | null,
  take: number,
): SQL {
  const before = beforeRev === null ? sql`` : sql`AND r.rev < ${beforeRev}`
  return sql`SELECT r.rev, r.cid, r.compiled_at, r.raw_system_hash, r.memfs_revision, r.content_hash, r.seen_at,
      r.changed, r.memory_files
    FROM prompt_revisions r WHERE r.did = ${did} AND r.rkey = ${rkey} ${before}
    ORDER BY r.rev DESC LIMIT ${take}`
}

export function readRevisionPage(
  db: Database,
  did: string,
  rkey: string,
  beforeRev: string | null,
  take: number,
): Promise<RevisionRow[]> {
  return db.read<RevisionRow>(revisionsQuery(did, rkey, beforeRev, take))
}

export async function readRevision(db: Database, did: string, rkey: string, rev: string) {
  const rows = await db.rows<RevisionTextRow>(revisionQuery(did, rkey, rev))
  return rows[0] ?? null
}

/** The newest revision at or below `atOrBelow` (or the newest of all), and the one before. */
export function readRevisionPair(
  db: Database,
  did: string,
  rkey: string,
  atOrBelow: string | null,
): Promise<RevisionTextRow[]> {
  return db.rows<RevisionTextRow>(revisionPairQuery(did, rkey, atOrBelow))
}

export type TextRow = Pick<typeof revisionTexts.$inferSelect, 'hash' | 'base' | 'length' | 'body'>

/** The rows of each named text and of every text its deltas rest on. */
export function readTextChains(db: Database, did: string, hashes: string[]): Promise<TextRow[]> {
  if (hashes.length === 0) return Promise.resolve([])
  return db.rows<TextRow>(textChainsQuery(did, [...new Set(hashes)]))
}

/** The current record's content and coreMemory, for a revision indexed before texts were kept. */
export async function readCurrentText(db: Database, did: string, rkey: string, cid: string) {
  const rows = await db.rows<{ content: string | null; core_memory: string | null }>(
    currentTextQuery(did, rkey, cid),
  )
  return rows[0] ?? null
}

/** A revision as a whole record is rebuilt from: the rest of it and where its texts are. */
export type RevisionRecordRow = Pick<
  typeof promptRevisions.$inferSelect,
  'did' | 'rkey' | 'cid' | 'contentHash' | 'coreMemoryHash' | 'coreMemoryAt' | 'coreMemoryLength'
> & {
  /** The record without content and coreMemory, as JSON text. */
  rest: string
}

/**
 * The kept revisions with these CIDs (one per key), for feed lines whose version is no
 * longer the current one; revisions indexed before the rest of the record was kept are not
 * among them. Keys travel as one JSON parameter (a list of keys, not a fixed statement).
 */
export function readRevisionRecords(
  db: Database,
  keys: ReadonlyArray<{ did: string; rkey: string; cid: string }>,
): Promise<RevisionRecordRow[]> {
  if (keys.length === 0) return Promise.resolve([])
  return db.rows<RevisionRecordRow>(sql`
    SELECT DISTINCT ON (r.did, r.rkey, r.cid) r.did, r.rkey, r.cid, r.record_rest::text AS rest,
      r.content_hash AS "contentHash", r.core_memory_hash AS "coreMemoryHash",
      r.core_memory_at AS "coreMemoryAt", r.core_memory_length AS "coreMemoryLength"
    FROM jsonb_to_recordset(${JSON.stringify(keys)}::jsonb) AS k(did text, rkey text, cid text)
    JOIN prompt_revisions r ON r.did = k.did AND r.rkey = k.rkey AND r.cid = k.cid
    WHERE r.text_kept AND r.record_rest IS NOT NULL
    ORDER BY r.did, r.rkey, r.cid, r.rev DESC`)
}

/** The rows of each named (did, hash) text and of every text its deltas rest on. */
export function readRepoTextChains(
  db: Database,
  keys: ReadonlyArray<{ did: string; hash: string }>,
): Promise<RepoTextRow[]> {
  if (keys.length === 0) return Promise.resolve([])
  return db.rows(repoTextChainsQuery(keys))
}
