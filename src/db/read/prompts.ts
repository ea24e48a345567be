import type { Placeholder, SQL } from 'drizzle-orm'
import { FILTER_NAMES, FLAG_BITS, FLAG_NAMES, type FlagName } from '../../model/flags.ts'
import type { ListSort } from '../../model/list-sort.ts'
import type { Database } from '../client.ts'
import { evidenceColumns, evidenceJoins, type FlagEvidenceRow } from '../flag-evidence.ts'
import { sql } from '../orm.ts'
import { prompts } from '../schema.ts'
import { type BatchOptions, batchedReader } from './batch.ts'
import { columnsOf, keyArrays, type RawRow } from './columns.ts'
import { afterPosition, type ListPosition, listOrder, sortKeyText } from './list-order.ts'

// Prompts in raw `sql`: flag predicates are spelled exactly as the partial indexes' (literal
// bits, no parameters) so the planner can prove they apply, and the hot statements run
// prepared, which takes fixed-text SQL. Visible is always NOT deleted AND NOT hidden, so
// hidden accounts never leak into an answer or a count.

export type ListFlag = FlagName | 'ok'

export interface PromptListQuery {
  flag: ListFlag | null
  did: string | null
  agent: { did: string; rkey: string } | null
  sort: ListSort
  /** Continue after this position in `sort`'s order. */
  after: ListPosition | null
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
  'changed',
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

/** A list page's row: its sort key as text too, for the next page's cursor (null: created). */
export type PromptListRow = PromptRow & { sortKey: string | null }

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
  if (q.after) where.push(afterPosition(q.sort, q.after))
  return where
}

/**
 * A prompt's row for its answer: the record as its stored JSON text (the API sends it as
 * it is, see api/raw-record.ts), and its flags' evidence, in one statement.
 */
export type PromptAnswerRow = Omit<PromptRow, 'record'> & { recordJson: string } & FlagEvidenceRow

export interface PromptKey {
  did: string
  rkey: string
}

// (did, rkey) is each table's primary key, so the rows the evidence joins already probe are
// the only ones EXISTS could find: two probes a lookup instead of four.
const JOINED_EXISTS = sql.raw(`
  COALESCE(NOT ec.deleted AND NOT ec.hidden, false) AS "conversationExists",
  COALESCE(NOT ea.hidden, false) AS "agentExists"`)

/**
 * The answer rows of many prompts in one statement; `key` is each row's 1-based position
 * among the keys, so rows match keys without comparing strings. Absent or invisible
 * prompts have no row.
 */
export function promptAnswersQuery(dids: SQL | Placeholder, rkeys: SQL | Placeholder): SQL {
  return sql`SELECT k.i::int AS "key", ${columnsOf(prompts, 'p', VIEW_KEYS)},
    p.record::text AS "recordJson", ${JOINED_EXISTS}, ${evidenceColumns}
    FROM unnest(${dids}::text[], ${rkeys}::text[]) WITH ORDINALITY AS k(did, rkey, i)
    JOIN prompts p ON p.did = k.did AND p.rkey = k.rkey AND ${VISIBLE}
    ${evidenceJoins}`
}

/** The lookup's statement, built once: only its two arrays change per batch. */
const PROMPT_ANSWERS = promptAnswersQuery(sql.placeholder('dids'), sql.placeholder('rkeys'))

/** A batch's row: the answer row and its key's position among the batch's keys (1-based). */
export type KeyedAnswerRow = PromptAnswerRow & { key: number }

/**
 * Each key's answer row, in the keys' order (null: no visible prompt there). Rows keep their
 * `key` column, since copying each row to drop it costs more than it saves.
 */
export async function readPromptAnswers(
  db: Database,
  keys: readonly PromptKey[],
): Promise<Array<KeyedAnswerRow | null>> {
  const rows = await db.read<KeyedAnswerRow>(PROMPT_ANSWERS, keyArrays(keys))
  const byKey: Array<KeyedAnswerRow | null> = keys.map(() => null)
  for (const row of rows) byKey[row.key - 1] = row
  return byKey
}

// Larger batches would delay the first key's answer, smaller ones pay the per-statement cost
// again (bench/README.md, "Lookups in batches").
const ANSWER_BATCH: BatchOptions = { maxBatch: 16, inFlight: 4 }

/** A reader of one prompt's answer row whose lookups arriving together share a statement. */
export function batchedPromptAnswers(
  db: Database,
): (key: PromptKey) => Promise<PromptAnswerRow | null> {
  return batchedReader((keys) => readPromptAnswers(db, keys), ANSWER_BATCH)
}

export function promptListQuery(q: PromptListQuery): SQL {
  // The page is cut first so the existence checks run on its rows only: in the outer query
  // the planner hashes the whole conversations and agents tables instead.
  const order = listOrder(q.sort)
  return sql`SELECT ${promptListSelect}, ${sortKeyText(q.sort)} AS "sortKey" FROM (
      SELECT * FROM prompts p
      WHERE ${sql.join(listWhere(q), sql` AND `)}
      ORDER BY ${order}
      LIMIT ${q.take}
    ) p
    ORDER BY ${order}`
}

export function readPromptPage(db: Database, q: PromptListQuery): Promise<PromptListRow[]> {
  return db.read<PromptListRow>(promptListQuery(q))
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
  const flags = Object.fromEntries(FILTER_NAMES.map((f) => [f, Number(r[f] ?? 0)])) as FlagCounts
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
