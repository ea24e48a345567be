import type { SQL, Table } from 'drizzle-orm'
import { getTableColumns, sql } from '../orm.ts'

// Raw statements (the ones the builder cannot say) still take their select lists and row
// types from schema.ts: columnsOf names each column by its schema key, so a row of
// `SELECT ${columnsOf(prompts, 'p', ['did', 'indexedAt'])}` is a Pick of prompts.$inferSelect.

/**
 * A schema value as a raw statement returns it: the drivers hand timestamps back as text
 * (postgres.js under drizzle) or a Date (PGlite), and int8 as text or a number.
 */
type RawValue<V> = V extends Date ? string | Date : V extends number ? number | string : V

/** A row of `columnsOf(table, alias, keys)`, as the driver returns it. */
export type RawRow<T> = { [K in keyof T]: RawValue<T[K]> }

/** Keys as the two text arrays of a statement built once (`unnest(:dids, :rkeys)`). */
export const keyArrays = (keys: ReadonlyArray<{ did: string; rkey: string }>) => ({
  dids: keys.map((k) => k.did),
  rkeys: keys.map((k) => k.rkey),
})

/** `alias.column AS "key"` for each key: fixed text, so fit for prepared statements. */
export function columnsOf<T extends Table>(
  table: T,
  alias: string,
  keys: ReadonlyArray<keyof T['$inferSelect'] & string>,
): SQL {
  const cols = getTableColumns(table) as Record<string, { name: string }>
  return sql.raw(keys.map((k) => `${alias}.${cols[k].name} AS "${k}"`).join(', '))
}
