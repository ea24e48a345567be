// The orders a prompt list can be read in (SPEC section 6, the `sort` of listPrompts and
// searchPrompts). Each is newest or most first, ties broken by (did, rkey), so a page
// boundary is one exact position; `created` is the record key's order, TIDs being times.

export const LIST_SORTS = ['created', 'compiled', 'indexed', 'recompiles', 'size'] as const

export type ListSort = (typeof LIST_SORTS)[number]

/** The order a list is in when the caller names none. */
export const DEFAULT_SORT: ListSort = 'created'

/**
 * The range of each order's key (an integer: µs for times, see db/read/list-order.ts), so
 * a cursor's key is checked before it reaches SQL, where one out of range is an error.
 */
export const SORT_KEY_RANGE: Record<Exclude<ListSort, 'created'>, readonly [bigint, bigint]> = {
  compiled: [-(2n ** 63n), 2n ** 63n - 1n],
  // Years 1 to 9999, the datetimes a timestamp column holds.
  indexed: [-62_135_596_800_000_000n, 253_402_300_799_999_999n],
  recompiles: [-(2n ** 31n), 2n ** 31n - 1n],
  size: [-(2n ** 31n), 2n ** 31n - 1n],
}
