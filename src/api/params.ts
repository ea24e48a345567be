import { isValidDid, isValidHandle, isValidRecordKey } from '@atproto/syntax'
import type { ListPosition } from '../db/read/list-order.ts'
import { LIST_SORTS, type ListSort, SORT_KEY_RANGE } from '../model/list-sort.ts'
import { badRequest, DECIMAL_PATTERN } from './http-errors.ts'

// Every parameter is checked here, before any query runs: a malformed value is a 400
// naming the parameter, and whatever reaches SQL is syntactically a DID, handle, record
// key or TID (and travels as a bound parameter anyway).

/** A repo named by its DID, or by a handle the index still has to resolve. */
export type Actor = { kind: 'did'; did: string } | { kind: 'handle'; handle: string }

export function parseActor(value: string, param: string): Actor {
  if (value.startsWith('did:')) {
    if (value.length <= 2048 && isValidDid(value)) return { kind: 'did', did: value }
    throw badRequest(`${param} is not a valid DID`)
  }
  if (isValidHandle(value)) return { kind: 'handle', handle: value.toLowerCase() }
  throw badRequest(`${param} must be a DID or a handle`)
}

export function parseRkey(value: string, param = 'rkey'): string {
  if (isValidRecordKey(value)) return value
  throw badRequest(`${param} is not a valid record key`)
}

export interface RecordRef {
  actor: Actor
  collection: string
  rkey: string
}

const AT_URI = /^at:\/\/([^/?#]+)\/([^/?#]+)\/([^/?#]+)$/

/** An at-uri naming one record of one of `collections`, e.g. at://did:plc:x/coll/rkey. */
export function parseRecordUri(value: string, param: string, collections: string[]): RecordRef {
  const m = AT_URI.exec(value)
  const expect = `an at-uri of a ${collections.join(' or ')} record (at://{did}/{collection}/{rkey})`
  if (!m || !collections.includes(m[2])) throw badRequest(`${param} must be ${expect}`)
  const [, host, collection, rkey] = m
  let actor: Actor
  try {
    actor = parseActor(host, param)
  } catch {
    throw badRequest(`${param} has an invalid authority: it must be a DID or a handle`)
  }
  return { actor, collection, rkey: parseRkey(rkey, param) }
}

// Numbers in a query string are plain decimal digits (no sign, exponent, hex, fraction,
// spaces or leading zero), so each number has one spelling and a typo is a 400, not a guess.
const DECIMAL = new RegExp(DECIMAL_PATTERN)

/** `value` as an integer in [min, max], or null when it is not one (see DECIMAL). */
export function strictInteger(value: string, min: number, max: number): number | null {
  if (value.length > 16 || !DECIMAL.test(value)) return null
  const n = Number(value)
  return Number.isSafeInteger(n) && n >= min && n <= max ? n : null
}

/**
 * A query-string integer of a route outside the catalog: its JSON schema checks the syntax (so
 * Ajv's message names the rule), and `parse` its range and default.
 */
export function integerParam(
  range: { def: number; min: number; max: number },
  description: string,
  refusal: string,
) {
  return {
    schema: { type: 'string', pattern: DECIMAL_PATTERN, maxLength: 16, description } as const,
    parse(value: string | undefined): number {
      if (value === undefined) return range.def
      const n = strictInteger(value, range.min, range.max)
      if (n === null) throw badRequest(refusal)
      return n
    },
  }
}

/** A change-feed position: the last seq read, 0 for the start. */
export const SINCE = integerParam(
  { def: 0, min: 0, max: Number.MAX_SAFE_INTEGER },
  'Last seq read, in plain decimal digits; default 0',
  'since must be an integer >= 0 in plain decimal digits (the last seq read)',
)

/**
 * Position after the last item of a page, in the order the page was read in: (rkey, did)
 * for `created`, and the sort key first for the others (db/read/list-order.ts).
 */
export interface PageKey extends ListPosition {
  sort: ListSort
}

/** A cursor's syntax: base64url, bounded. */
export const BASE64URL = /^[A-Za-z0-9_-]{1,2048}$/
type KeyedSort = Exclude<ListSort, 'created'>

/** A sort key: an integer of at most 19 digits, every order's key being one. */
const SORT_KEY = /^-?[0-9]{1,19}$/

/** Whether `key` is an integer in the range of `sort`'s key. */
function inRange(sort: KeyedSort, key: unknown): key is string {
  if (typeof key !== 'string' || !SORT_KEY.test(key)) return false
  const [min, max] = SORT_KEY_RANGE[sort]
  const n = BigInt(key)
  return n >= min && n <= max
}

// `created` cursors stay [rkey, did], as handed out before the other sorts, so they still
// page; the others add their name and key: [rkey, did, sort, key].
export function encodeCursor(key: PageKey): string {
  const parts =
    key.sort === 'created' ? [key.rkey, key.did] : [key.rkey, key.did, key.sort, key.key]
  return Buffer.from(JSON.stringify(parts), 'utf8').toString('base64url')
}

const fail = () =>
  badRequest('cursor is malformed: pass back the cursor of the previous page unchanged')

export function decodeCursor(value: string): PageKey {
  if (!BASE64URL.test(value)) throw fail()
  let parsed: unknown
  try {
    parsed = JSON.parse(Buffer.from(value, 'base64url').toString('utf8'))
  } catch {
    throw fail()
  }
  if (!Array.isArray(parsed) || (parsed.length !== 2 && parsed.length !== 4)) throw fail()
  const [rkey, did, sort, key] = parsed as unknown[]
  if (!isValidRecordKey(rkey) || typeof did !== 'string' || !isValidDid(did)) throw fail()
  if (parsed.length === 2) return { sort: 'created', rkey, did, key: null }
  const named = LIST_SORTS.find((s): s is KeyedSort => s !== 'created' && s === sort)
  if (!named || !inRange(named, key)) throw fail()
  return { sort: named, rkey, did, key }
}

/** Revision pages continue below the rev of the last revision served. */
export function encodeRevCursor(rev: string): string {
  return Buffer.from(rev, 'utf8').toString('base64url')
}

export function decodeRevCursor(value: string): string {
  if (!BASE64URL.test(value)) throw fail()
  const rev = Buffer.from(value, 'base64url').toString('utf8')
  // Revs are TIDs; the record-key charset is checked so a stored odd rev still pages.
  if (!isValidRecordKey(rev)) throw fail()
  return rev
}

/** The `include` parameter of the feed and the subscription: `record` or nothing. */
export const INCLUDE_PARAM = {
  type: 'string',
  maxLength: 64,
  description: '`record`: upsert lines carry the record with their cid',
} as const

/** True for include=record; any other value is a 400 naming the one choice. */
export function parseInclude(value: string | undefined): boolean {
  if (value === undefined) return false
  if (value === 'record') return true
  throw badRequest('include must be record (the only thing a change line can include)')
}
