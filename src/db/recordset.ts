import type { SQL, SQLChunk } from 'drizzle-orm'
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core'
import { getTableColumns, sql } from './orm.ts'

// Rows as one JSON parameter expanded with jsonb_to_recordset: one round trip whatever the
// batch size, no parameter limit, and the same SQL on postgres.js and PGlite. The column list
// is spelled from schema.ts at module load, so an added column cannot desync it.

export const json = (v: unknown): SQL => sql`${JSON.stringify(v)}::jsonb`

/**
 * A value already serialized as JSON, spliced in as it is: a prompt record is serialized
 * once while it is analyzed (indexer/prepare.ts), so the batch's statement never walks it again.
 */
export class JsonText {
  readonly text: string
  constructor(text: string) {
    this.text = text
  }
}

const omitJsonText = (_key: string, v: unknown) => (v instanceof JsonText ? undefined : v)

/** One flat row as a JSON object, its JsonText properties spliced in verbatim. */
function rowJson(row: Record<string, unknown>): string {
  let spliced = ''
  for (const k in row) {
    const v = row[k]
    if (v instanceof JsonText) spliced += `,${JSON.stringify(k)}:${v.text}`
  }
  if (spliced === '') return JSON.stringify(row)
  const rest = JSON.stringify(row, omitJsonText)
  return rest === '{}' ? `{${spliced.slice(1)}}` : `${rest.slice(0, -1)}${spliced}}`
}

const FIRST_ROW = sql.raw('(VALUES (')
const NEXT_VALUE = sql.raw('::text, ')
const NEXT_ROW = sql.raw('::text), (')
const LAST_ROW = sql.raw('::text)) AS ')

/**
 * Long texts of rows as bind parameters, `(VALUES ($1::text, ...), ...) AS alias(columns)`,
 * which skip the JSON lexer (model/record-parts.ts). Callers stay under the protocol's
 * 65,535 parameters with TEXT_ROWS_PER_STATEMENT.
 */
export function textValues(
  alias: string,
  columns: readonly string[],
  rows: ReadonlyArray<ReadonlyArray<string | null>>,
): SQL {
  const as = sql.identifier(alias)
  if (rows.length === 0) {
    // An empty VALUES is not SQL: no rows of the same columns.
    const nulls = sql.join(
      columns.map((c) => sql`NULL::text AS ${sql.identifier(c)}`),
      sql`, `,
    )
    return sql`(SELECT ${nulls} WHERE false) AS ${as}`
  }
  // One flat list of separators and parameters: nested sql`` fragments per value made
  // drizzle's rendering cost as much as the parse they save.
  const chunks: SQLChunk[] = []
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]
    for (let j = 0; j < row.length; j++) {
      chunks.push(j > 0 ? NEXT_VALUE : i > 0 ? NEXT_ROW : FIRST_ROW, sql.param(row[j]))
    }
  }
  chunks.push(LAST_ROW)
  const names = sql.join(
    columns.map((c) => sql.identifier(c)),
    sql`, `,
  )
  return sql`${sql.join(chunks)}${as}(${names})`
}

/** Rows per statement that sends texts as parameters (up to 4 each; a batch may be 100,000). */
export const TEXT_ROWS_PER_STATEMENT = 10_000

export function* chunked<T>(items: readonly T[], size: number): Generator<T[]> {
  for (let i = 0; i < items.length; i += size) yield items.slice(i, i + size)
}

/** Rows as one jsonb parameter (a JSON array), with JsonText values as they are. */
export const jsonRows = (rows: ReadonlyArray<Record<string, unknown>>): SQL =>
  sql`${`[${rows.map(rowJson).join(',')}]`}::jsonb`

/**
 * DIDs for `did IN ...`. A short list goes as separate parameters, so the planner sees how
 * many there are: a jsonb array is always guessed at 100 elements, which for did-prefix
 * lookups on a large table is enough to prefer a scan of the whole table to index probes.
 */
export function didSet(dids: string[]): SQL {
  if (dids.length > 0 && dids.length <= 1000)
    return sql`(${sql.join(
      dids.map((d) => sql`${d}`),
      sql`, `,
    )})`
  return sql`(SELECT jsonb_array_elements_text(${json(dids)}))`
}

/** `column IN (dids)` as a builder condition, with the parameters didSet chooses. */
export const inDids = (column: PgColumn, dids: string[]): SQL => sql`${column} IN ${didSet(dids)}`

type Key<T extends PgTable> = keyof T['_']['columns'] & string

/** One table's columns `keys`, as the rows of a jsonb_to_recordset `x` keyed by property name. */
export interface Recordset<T extends PgTable, K extends Key<T>> {
  /** The table's column names, for `INSERT INTO t (...)`. */
  readonly names: SQL
  /** `x."prop", ...` (or its override): the expanded values, in the order of `names`. */
  readonly values: SQL
  /** `jsonb_to_recordset($1) AS x("prop" type, ...)` of the given rows. */
  from(rows: ReadonlyArray<Pick<T['$inferInsert'], K & keyof T['$inferInsert']>>): SQL
}

/** `overrides`: what `values` says instead of `x."prop"` for those keys. */
export function recordset<T extends PgTable, K extends Key<T>>(
  table: T,
  keys: readonly K[],
  overrides: Partial<Record<K, SQL>> = {},
): Recordset<T, K> {
  const columns = getTableColumns(table)
  const list = (f: (k: K) => SQL) => sql.join(keys.map(f), sql`, `)
  const names = list((k) => sql`${sql.identifier(columns[k].name)}`)
  const values = list((k) => overrides[k] ?? sql`x.${sql.identifier(k)}`)
  const defs = list((k) => sql`${sql.identifier(k)} ${sql.raw(columns[k].getSQLType())}`)
  return {
    names,
    values,
    from: (rows) => sql`jsonb_to_recordset(${jsonRows(rows)}) AS x(${defs})`,
  }
}

/** `col = excluded.col, ...` for an ON CONFLICT DO UPDATE of the given columns. */
export function excludedSet<T extends PgTable>(table: T, keys: ReadonlyArray<Key<T>>): SQL {
  const columns = getTableColumns(table)
  return sql.join(
    keys.map((k) => {
      const name = sql.identifier(columns[k].name)
      return sql`${name} = excluded.${name}`
    }),
    sql`, `,
  )
}
