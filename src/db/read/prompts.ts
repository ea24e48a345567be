import { type Placeholder, type SQL, sql } from 'drizzle-orm'
import { FLAG_BITS, FLAG_NAMES, type FlagName } from '../../model/flags.ts'
import type { Database } from '../client.ts'
import { evidenceColumns, evidenceJoins, type FlagEvidenceRow } from '../flag-evidence.ts'
import { prompts } from '../schema.ts'
import { columnsOf, type RawRow } from './columns.ts'

// Prompts: one by key, a filtered page, and flag counts. Raw `sql` throughout, because:
// flag predicates are spelled exactly like the partial indexes' (`(flags & 1) <> 0`,
// `flags = 0`, literal bits, no parameters) so the planner can prove they apply; pages
// sort `rkey DESC NULLS LAST, did`, the indexes' own order, cut in a subquery first; and
// the hot statements run prepared (db.read), which takes fixed-text SQL. "Visible" is
// always NOT deleted AND NOT hidden: hidden accounts never leak into an answer or a count.

export type ListFlag = FlagName | 'ok'

export interface PromptListQuery {
  flag: ListFlag | null
  did: string | null
  agent: { did: string; rkey: string } | null
  /** Continue after this (rkey, did). */
  after: { rkey: string; did: string } | null
  /** Rows to fetch: the page size plus one, to know whether another page follows. */
  take: number
}

const VIEW_KEYS = [
  'did',
  'rkey',
  'rev',
  'cid',
  'flags',
  'recompiles',
  'indexedAt',
  'validationError',
  'agentUri',
  'contentBytes',
  'source',
  'verified',
  'commitCid',
] as const

/** A prompt row as a view is made of: the record (or its list form) and two existence checks. */
export type PromptRow = RawRow<Pick<typeof prompts.$inferSelect, (typeof VIEW_KEYS)[number]>> & {
  record: unknown
  conversationExists: boolean
  agentExists: boolean
}

export const VISIBLE = sql.raw('NOT p.deleted AND NOT p.hidden')

// Lists leave out the bulky fields: the stored cut form (see schema.ts, prompts.listRecord).
const LIST_RECORD = sql.raw('p.list_record AS record')

const EXISTS_COLUMNS = sql`
  EXISTS (SELECT 1 FROM conversations c WHERE c.did = p.did AND c.rkey = p.rkey AND NOT c.deleted AND NOT c.hidden) AS "conversationExists",
  EXISTS (SELECT 1 FROM agents a WHERE a.did = p.agent_did AND a.rkey = p.agent_rkey AND NOT a.deleted AND NOT a.hidden) AS "agentExists"`

/** The columns that make a list's PromptRow (the record in its list form); `p` is prompts. */
export const promptListSelect = sql`
  ${columnsOf(prompts, 'p', VIEW_KEYS)}, ${LIST_RECORD}, ${EXISTS_COLUMNS}`

/** The predicate of a flag's partial index, for table alias `p`. */
export function flagPredicate(flag: ListFlag): SQL {
  if (flag === 'ok') return sql.raw('p.flags = 0')
  return sql.raw(`(p.flags & ${FLAG_BITS[flag]}) <> 0`)
}

/** The filters and keyset bound of a list page (search adds its words to these). */
export function listWhere(q: Omit<PromptListQuery, 'take'>): SQL[] {
  const where: SQL[] = [VISIBLE]
  if (q.flag) where.push(flagPredicate(q.flag))
  if (q.did) where.push(sql`p.did = ${q.did}`)
  if (q.agent) where.push(sql`p.agent_did = ${q.agent.did} AND p.agent_rkey = ${q.agent.rkey}`)
  if (q.after) {
    // Mixed directions rule out a row comparison; the leading `rkey <=` is the index bound.
    const { rkey, did } = q.after
    where.push(sql`p.rkey <= ${rkey} AND (p.rkey < ${rkey} OR p.did > ${did})`)
  }
  return where
}

/**
 * A prompt's row for its answer: the record as its stored JSON text (the API sends it as
 * it is, see api/raw-record.ts), and its flags' evidence, in one statement.
 */
export type PromptAnswerRow = Omit<PromptRow, 'record'> & { recordJson: Buffer } & FlagEvidenceRow

/** The record's text stays bytes: it is copied into the answer as it is (db/raw-rows.ts). */
const RECORD_BYTES: ReadonlySet<string> = new Set(['recordJson'])

export function promptAnswerQuery(did: string | Placeholder, rkey: string | Placeholder): SQL {
  return sql`SELECT ${columnsOf(prompts, 'p', VIEW_KEYS)}, p.record::text AS "recordJson",
    ${EXISTS_COLUMNS}, ${evidenceColumns}
    FROM prompts p ${evidenceJoins}
    WHERE p.did = ${did} AND p.rkey = ${rkey} AND ${VISIBLE}`
}

/** The lookup's statement, built once: only its two values change per request. */
const PROMPT_ANSWER = promptAnswerQuery(sql.placeholder('did'), sql.placeholder('rkey'))

export async function readPromptAnswer(
  db: Database,
  did: string,
  rkey: string,
): Promise<PromptAnswerRow | null> {
  const rows = await db.read<PromptAnswerRow>(PROMPT_ANSWER, {
    values: { did, rkey },
    bytes: RECORD_BYTES,
  })
  return rows[0] ?? null
}

export function promptListQuery(q: PromptListQuery): SQL {
  // The page is cut first and the existence checks run on its rows only: left in the
  // outer query, the planner costs them for every row the scan might visit and hashes
  // the whole conversations and agents tables instead.
  return sql`SELECT ${promptListSelect} FROM (
      SELECT * FROM prompts p
      WHERE ${sql.join(listWhere(q), sql` AND `)}
      ORDER BY p.rkey DESC NULLS LAST, p.did ASC
      LIMIT ${q.take}
    ) p
    ORDER BY p.rkey DESC NULLS LAST, p.did ASC`
}

export function readPromptPage(db: Database, q: PromptListQuery): Promise<PromptRow[]> {
  return db.read<PromptRow>(promptListQuery(q))
}

export type FlagCounts = Record<ListFlag, number>

/** `total`, `ok` and one count per flag over the rows of `p`. */
export function flagCountColumns(): SQL {
  const cols = FLAG_NAMES.map(
    (f) =>
      sql`count(*) FILTER (WHERE (p.flags & ${sql.raw(String(FLAG_BITS[f]))}) <> 0)::int AS ${sql.identifier(f)}`,
  )
  return sql`count(*)::int AS total, count(*) FILTER (WHERE p.flags = 0)::int AS ok,
      ${sql.join(cols, sql`, `)}`
}

/** The counts of a flagCountColumns row (absent: all zero). */
export function flagCountsOf(row: Record<string, number> | undefined): {
  total: number
  flags: FlagCounts
} {
  const r = row ?? {}
  const flags = Object.fromEntries(
    [...FLAG_NAMES, 'ok'].map((f) => [f, Number(r[f] ?? 0)]),
  ) as FlagCounts
  return { total: Number(r.total ?? 0), flags }
}

export async function countPromptsByFlag(
  db: Database,
): Promise<{ total: number; flags: FlagCounts }> {
  const rows = await db.rows<Record<string, number>>(
    sql`SELECT ${flagCountColumns()} FROM prompts p WHERE ${VISIBLE}`,
  )
  return flagCountsOf(rows[0])
}
