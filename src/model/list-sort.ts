// The orders a prompt list can be read in (SPEC section 6, the `sort` of listPrompts and
// searchPrompts). Each is newest or most first, ties broken by (did, rkey), so a page
// boundary is one exact position; `created` is the record key's order, TIDs being times.

export const LIST_SORTS = ['created', 'compiled', 'indexed', 'recompiles', 'size'] as const

export type ListSort = (typeof LIST_SORTS)[number]

/** The order a list is in when the caller names none. */
export const DEFAULT_SORT: ListSort = 'created'
