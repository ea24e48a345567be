import type { SQL } from 'drizzle-orm'
import type { ListSort } from '../../model/list-sort.ts'
import { sql } from '../orm.ts'
import { LIST_SORT_KEYS } from '../schema.ts'

// The order and keyset bound of a prompt list page, spelled exactly like the order's partial
// index (schema.ts) so a page is a range of it. Ties go by did then rkey, descending like the
// key, so the bound is one row comparison the index answers whole even where most prompts
// share a key. Raw `sql`: the keys are expressions.

/** Where a page ends: the last row's record key, repo and, outside `created`, sort key. */
export interface ListPosition {
  rkey: string
  did: string
  /** The sort key as text (sortKeyText), null for `created`. */
  key: string | null
}

type KeyedSort = Exclude<ListSort, 'created'>

/** A cursor's sort key as the SQL value it compares with (its text was checked as digits). */
const BOUND: Record<KeyedSort, (key: string) => SQL> = {
  compiled: (k) => sql`${k}::bigint`,
  // Microseconds since the epoch, as exact as the column (a Date would keep milliseconds).
  indexed: (k) => sql`(timestamptz 'epoch' + ${k}::bigint * interval '1 microsecond')`,
  recompiles: (k) => sql`${k}::int`,
  size: (k) => sql`${k}::int`,
}

const keyOf = (sort: KeyedSort): SQL => sql.raw(LIST_SORT_KEYS[sort]('p.'))

/** The key of the page's last row as a cursor carries it: integer digits for every order. */
export function sortKeyText(sort: ListSort): SQL {
  if (sort === 'created') return sql.raw('NULL::text')
  if (sort === 'indexed')
    return sql.raw('(extract(epoch FROM p.indexed_at) * 1000000)::bigint::text')
  return sql`(${keyOf(sort)})::text`
}

/** ORDER BY of a page, for table alias `p`. */
export function listOrder(sort: ListSort): SQL {
  if (sort === 'created') return sql.raw('p.rkey DESC NULLS LAST, p.did ASC')
  // NULLS LAST as the index has them (drizzle's desc()); the columns have no nulls.
  return sql`${keyOf(sort)} DESC, p.did DESC NULLS LAST, p.rkey DESC NULLS LAST`
}

/** The rows after `after` in `sort`'s order, for table alias `p`. */
export function afterPosition(sort: ListSort, after: ListPosition): SQL {
  const { rkey, did, key } = after
  // Mixed directions rule out a row comparison here; the leading `<=` is the index bound.
  if (sort === 'created') return sql`p.rkey <= ${rkey} AND (p.rkey < ${rkey} OR p.did > ${did})`
  if (key === null) throw new Error(`a ${sort} position needs its sort key`)
  return sql`(${keyOf(sort)}, p.did, p.rkey) < (${BOUND[sort](key)}, ${did}, ${rkey})`
}
