import type { SQL } from 'drizzle-orm'
import { keyOf, type PreviousText, type TextRow } from '../model/rows.ts'
import { CHAIN_LIMIT } from '../model/text-delta.ts'
import { type Executor, rows } from './client.ts'
import { getTableColumns, sql } from './orm.ts'
import { chunked, json, recordset, TEXT_ROWS_PER_STATEMENT, textValues } from './recordset.ts'
import {
  type PromptRecord,
  promptRevisions,
  type RevisionDbRow,
  type RevisionTextDbRow,
  revisionTexts,
} from './schema.ts'

// Storage of revision content (see schema.ts, revision_texts): what the indexer reads to
// delta against, what it writes, and what the revision and diff endpoints read back.

/**
 * The current content of the given prompts, with its stored depth, when its text is kept:
 * the base a recompile's delta is taken against. A prompt whose text was never kept (an
 * older database) has no base, and its next revision is stored whole.
 */
export async function loadPreviousTexts(
  ex: Executor,
  keys: Array<{ did: string; rkey: string }>,
): Promise<Map<string, PreviousText>> {
  if (keys.length === 0) return new Map()
  // Raw: the builder cannot join a jsonb_to_recordset, nor a LATERAL over the record's JSON.
  const found = await rows<
    Pick<PromptRecord, 'did' | 'rkey'> &
      Pick<RevisionTextDbRow, 'hash' | 'depth'> & { content: string }
  >(
    ex,
    sql`SELECT p.did, p.rkey, x.content, t.hash, t.depth
      FROM prompts p
      JOIN jsonb_to_recordset(${json(keys)}) AS k(did text, rkey text) ON p.did = k.did AND p.rkey = k.rkey
      CROSS JOIN LATERAL (SELECT p.record->>'content' AS content) x
      -- The hash the indexer stored with the row; only rows from before it was kept hash here.
      JOIN revision_texts t ON t.did = p.did
        AND t.hash = COALESCE(p.content_hash, encode(sha256(convert_to(x.content, 'UTF8')), 'hex'))
      WHERE NOT p.deleted AND jsonb_typeof(p.record->'content') = 'string'`,
  )
  const out = new Map<string, PreviousText>()
  for (const r of found)
    out.set(keyOf(r.did, r.rkey), { content: r.content, hash: r.hash, depth: Number(r.depth) })
  return out
}

// The body (a whole content or a delta, the bulk of the row) goes as a text parameter, the
// rest in the jsonb parameter: see model/record-parts.ts for why.
const TEXT_ROWS = recordset(
  revisionTexts,
  Object.keys(getTableColumns(revisionTexts)) as Array<keyof TextRow>,
  { body: sql`b.body` },
)

export async function insertRevisionTexts(ex: Executor, rows: TextRow[]): Promise<void> {
  for (const part of chunked(rows, TEXT_ROWS_PER_STATEMENT)) {
    // Keyed (did, hash) within a batch (indexer/revision-texts.ts), so the join pairs each once.
    const heads = part.map((r) => ({ ...r, body: '' }))
    const bodies = textValues(
      'b',
      ['did', 'hash', 'body'],
      part.map((r) => [r.did, r.hash, r.body]),
    )
    // Raw: the builder inserts VALUES, not the rows of a jsonb_to_recordset.
    // Never replaced on conflict: a stored row may be the base of others.
    await ex.execute(sql`
      INSERT INTO revision_texts (${TEXT_ROWS.names}) SELECT ${TEXT_ROWS.values}
      FROM ${TEXT_ROWS.from(heads)} JOIN ${bodies} ON b.did = x.did AND b.hash = x.hash
      ON CONFLICT DO NOTHING`)
  }
}

/** A stored revision of one prompt, as the raw reads below return it (column names). */
export type RevisionTextRow = Omit<RevisionDbRow, 'did' | 'rkey'>

const REVISION_COLUMNS = sql.join(
  Object.values(getTableColumns(promptRevisions))
    .filter((c) => c.name !== 'did' && c.name !== 'rkey')
    .map((c) => sql`r.${sql.identifier(c.name)}`),
  sql`, `,
)

// Raw, these reads: they go to db.read (a named prepared statement) and need fixed SQL text.
export function revisionQuery(did: string, rkey: string, rev: string): SQL {
  return sql`SELECT ${REVISION_COLUMNS} FROM prompt_revisions r
    WHERE r.did = ${did} AND r.rkey = ${rkey} AND r.rev = ${rev}`
}

/** The newest revision at or below `atOrBelow` (or the newest of all), and the one before. */
export function revisionPairQuery(did: string, rkey: string, atOrBelow: string | null): SQL {
  const bound = atOrBelow === null ? sql`` : sql`AND r.rev <= ${atOrBelow}`
  return sql`SELECT ${REVISION_COLUMNS} FROM prompt_revisions r
    WHERE r.did = ${did} AND r.rkey = ${rkey} ${bound} ORDER BY r.rev DESC LIMIT 2`
}

/** The rows of each named text and of every text its deltas rest on. */
export function textChainsQuery(did: string, hashes: string[]): SQL {
  return sql`WITH RECURSIVE chain AS (
      SELECT t.hash, t.base, t.length, t.body, 0 AS n FROM revision_texts t
      WHERE t.did = ${did} AND t.hash IN (SELECT jsonb_array_elements_text(${json(hashes)}))
      UNION
      SELECT t.hash, t.base, t.length, t.body, c.n + 1 FROM chain c
      JOIN revision_texts t ON t.did = ${did} AND t.hash = c.base
      WHERE c.n < ${CHAIN_LIMIT}
    )
    SELECT DISTINCT ON (hash) hash, base, length, body FROM chain`
}

/** A row of repoTextChainsQuery: one text of one repo, whole or a delta on `base`. */
export type RepoTextRow = Omit<RevisionTextDbRow, 'depth'>

/** As textChainsQuery, for texts of several repos: each (did, hash) and the texts under it. */
export function repoTextChainsQuery(keys: ReadonlyArray<{ did: string; hash: string }>): SQL {
  return sql`WITH RECURSIVE chain AS (
      SELECT t.did, t.hash, t.base, t.length, t.body, 0 AS n
      FROM jsonb_to_recordset(${JSON.stringify(keys)}::jsonb) AS k(did text, hash text)
      JOIN revision_texts t ON t.did = k.did AND t.hash = k.hash
      UNION
      SELECT t.did, t.hash, t.base, t.length, t.body, c.n + 1 FROM chain c
      JOIN revision_texts t ON t.did = c.did AND t.hash = c.base
      WHERE c.n < ${CHAIN_LIMIT}
    )
    SELECT DISTINCT ON (did, hash) did, hash, base, length, body FROM chain`
}

/** The current record's content and coreMemory, for a revision indexed before texts were kept. */
export function currentTextQuery(did: string, rkey: string, cid: string): SQL {
  return sql`SELECT p.record->>'content' AS content, p.record->>'coreMemory' AS core_memory
    FROM prompts p WHERE p.did = ${did} AND p.rkey = ${rkey} AND p.cid = ${cid} AND NOT p.deleted
      AND jsonb_typeof(p.record) = 'object'`
}
