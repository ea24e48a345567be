import { type SQL, sql } from 'drizzle-orm'
import type { Database } from '../client.ts'
import {
  currentTextQuery,
  type RevisionTextRow,
  revisionPairQuery,
  revisionQuery,
  textChainsQuery,
} from '../revision-texts.ts'
import type { prompts, revisionTexts } from '../schema.ts'

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
  return sql`SELECT r.rev, r.cid, r.compiled_at, r.raw_system_hash, r.memfs_revision, r.content_hash, r.seen_at
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
