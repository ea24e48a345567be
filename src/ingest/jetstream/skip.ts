import { isValidDid } from '@atproto/syntax'
import type { Logger } from 'pino'
import type { SourceItem } from '../../model/events.ts'
import type { Metrics } from '../../observe/metrics.ts'

// The vocabulary of Jetstream v1 normalization shared by its commit, account and identity
// readers (and the v2 frame reader): results, skip reasons, the envelope checks, and how a
// skip is counted and logged.

export type SkipReason =
  | 'invalid_json'
  | 'not_object'
  | 'unknown_kind'
  | 'missing_field'
  | 'bad_field'
  | 'bad_did'
  | 'bad_nsid'
  | 'bad_rkey'
  | 'bad_rev'
  | 'bad_cid'
  | 'bad_record'
  | 'bad_seq'
  | 'bad_bytes'

export interface NormalizeOk {
  ok: true
  /** `event` is null for commits of collections we do not keep: the cursor still moves. */
  item: SourceItem
  /** Identity events: the handle as Jetstream sent it; `item.event.handle` stays null until verified. */
  unverifiedHandle: string | null
  /** True when strings of the record had U+0000 or lone surrogates replaced by U+FFFD. */
  sanitized: boolean
}

export interface NormalizeSkip {
  ok: false
  reason: SkipReason
  detail: string
  /** A metric label: a kept collection, else `unknown` (labels must stay low-cardinality). */
  collection: string
  /** `create` | `update` | `delete` | `account` | `identity` | `unknown` */
  op: string
  /**
   * Present when `time_us` and `did` could be read (the envelope of an event of the stream),
   * so the cursor can still move past the line; absent, the line must not move the cursor.
   */
  timeUs?: number
  /** The frame's Jetstream seq (its `cursor` field), when a v2 server sent one. */
  seq?: number
}

export type NormalizeResult = NormalizeOk | NormalizeSkip

export interface NormalizeOptions {
  /** Collections we keep; commits of any other collection yield `event: null`. */
  collections: ReadonlySet<string>
  /**
   * Take a frame's `cursor` field (a v2 server's seq) as its position, a `seq` cursor instead
   * of the line's `time_us`; replay files do not.
   */
  seqCursor?: boolean
}

export type Json = Record<string, unknown>

export function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

export function checkBase(
  v: Json,
  timeUs: number | undefined,
  collection: string,
  op: string,
): NormalizeSkip | { ok: true; did: string; timeUs: number } {
  if (v.time_us === undefined) return skipOf('missing_field', 'missing time_us', collection, op)
  if (timeUs === undefined)
    return skipOf('bad_field', 'time_us is not a non-negative integer', collection, op)
  if (typeof v.did !== 'string') return skipOf('missing_field', 'missing did', collection, op)
  if (!isValidDid(v.did)) return skipOf('bad_did', `bad did ${str(v.did)}`, collection, op)
  return { ok: true, did: v.did, timeUs }
}

export function rawTimeUs(v: Json): number | undefined {
  const t = v.time_us
  return typeof t === 'number' && Number.isSafeInteger(t) && t >= 0 ? t : undefined
}

export function skipOf(
  reason: SkipReason,
  detail: string,
  collection: string,
  op: string,
  timeUs?: number,
): NormalizeSkip {
  const out: NormalizeSkip = { ok: false, reason, detail, collection, op }
  if (timeUs !== undefined) out.timeUs = timeUs
  return out
}

/** Shortened and quoted, for log details: input is untrusted and may be huge. */
export function str(v: unknown): string {
  const s = typeof v === 'string' ? JSON.stringify(v) : String(v)
  return s.length > 80 ? `${s.slice(0, 80)}…` : s
}

/** Counts a skipped event as `outcome=error` and logs why (with e.g. `{ line }` in `extra`). */
export function recordSkip(
  deps: { logger: Logger; metrics: Metrics },
  source: string,
  skip: NormalizeSkip,
  extra: Record<string, unknown> = {},
): void {
  const { reason, collection, op, timeUs, detail } = skip
  deps.metrics.eventsTotal.inc({ source, collection, op, outcome: 'error' })
  deps.logger.warn(
    { source, reason, collection, op, timeUs, ...extra },
    `skipped bad event (${reason}): ${detail}`,
  )
}
