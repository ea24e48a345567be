import {
  isValidDid,
  isValidHandle,
  isValidNsid,
  isValidRecordKey,
  isValidTid,
} from '@atproto/syntax'
import type { CommitOp, IndexEvent } from '../indexer/events.ts'
import type { SourceItem } from '../indexer/sink.ts'
import { sanitizeJson } from './sanitize-json.ts'

// Jetstream v1 JSON (also the replay file format) → normalized SourceItem. Pure: no I/O,
// so every source and test shares one definition of "bad input".

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
  /** The frame's Jetstream seq (`cursor` field), when a v2 server sent one. */
  cursor?: number
}

export type NormalizeResult = NormalizeOk | NormalizeSkip

export interface NormalizeOptions {
  /** Collections we keep; commits of any other collection yield `event: null`. */
  collections: ReadonlySet<string>
  /** Take a frame's `cursor` field (a v2 server's seq) as its cursor; replay files do not. */
  seqCursor?: boolean
}

const OPS: ReadonlySet<string> = new Set(['create', 'update', 'delete'])

type Json = Record<string, unknown>

export function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** Normalizes one Jetstream v1 event, given as a raw line or an already parsed value. */
export function normalizeJetstreamEvent(
  input: string | unknown,
  opts: NormalizeOptions,
): NormalizeResult {
  let value: unknown = input
  if (typeof input === 'string') {
    try {
      value = JSON.parse(input)
    } catch (err) {
      return skipOf('invalid_json', (err as Error).message.slice(0, 200), 'unknown', 'unknown')
    }
  }
  if (!isObject(value))
    return skipOf('not_object', 'event is not a JSON object', 'unknown', 'unknown')

  const res = normalizeObject(value, opts)
  // A v2 server adds its own `seq` as `cursor` to v1 frames: the better resume point (SPEC 5).
  const seq = opts.seqCursor ? jetstreamSeqOf(value.cursor) : null
  if (seq === null) return res
  if (res.ok) res.item.cursor = seq
  else res.cursor = seq
  return res
}

/** A Jetstream seq: a positive safe integer below the range v2 reads as unix microseconds. */
export function jetstreamSeqOf(v: unknown): number | null {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 1 && v < SEQ_LIMIT ? v : null
}

/** Cursor values at or above this are unix-microsecond timestamps (v1 and v2 alike). */
export const SEQ_LIMIT = 1e15

function normalizeObject(value: Json, opts: NormalizeOptions): NormalizeResult {
  const timeUs = rawTimeUs(value)
  // A position is only as good as the envelope it came in: a line whose DID or time cannot be
  // read was not an event of the stream, so it must not drive the cursor. Past the envelope,
  // a bad commit or record is an event that was read: counted, and the cursor moves past it.
  const at = timeUs !== undefined && typeof value.did === 'string' && isValidDid(value.did)
  const trusted = at ? timeUs : undefined
  const kind = value.kind
  if (kind === 'commit') return normalizeCommit(value, trusted, opts)
  if (kind === 'account' || kind === 'identity') {
    const base = checkBase(value, timeUs, 'unknown', kind)
    if (!base.ok) return base
    return kind === 'account'
      ? normalizeAccount(value, base.did, base.timeUs)
      : normalizeIdentity(value, base.did, base.timeUs)
  }
  return skipOf('unknown_kind', `unknown kind ${str(kind)}`, 'unknown', 'unknown', trusted)
}

function checkBase(
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

/** `timeUs`: the line's time, only when its DID could be read too (else undefined). */
function normalizeCommit(
  v: Json,
  timeUs: number | undefined,
  opts: NormalizeOptions,
): NormalizeResult {
  const c = v.commit
  if (!isObject(c)) return skipOf('missing_field', 'missing commit', 'unknown', 'unknown', timeUs)
  const rawOp = c.operation
  const op = typeof rawOp === 'string' && OPS.has(rawOp) ? (rawOp as CommitOp) : null
  const opLabel = op ?? 'unknown'
  const coll = c.collection
  if (typeof coll !== 'string')
    return skipOf('missing_field', 'missing commit.collection', 'unknown', opLabel, timeUs)
  // Collections we do not keep are not our business: only the cursor moves, no error.
  if (!opts.collections.has(coll)) {
    if (timeUs !== undefined) return filtered(timeUs)
    // Not our collection, but a position all the same: refused unless its envelope reads.
    const base = checkBase(v, rawTimeUs(v), 'unknown', opLabel)
    return base.ok ? filtered(base.timeUs) : base
  }
  const base = checkBase(v, rawTimeUs(v), coll, opLabel)
  if (!base.ok) return base
  const at = base.timeUs
  if (!isValidNsid(coll))
    return skipOf('bad_nsid', `bad collection ${str(coll)}`, 'unknown', opLabel, at)
  if (rawOp === undefined)
    return skipOf('missing_field', 'missing commit.operation', coll, opLabel, at)
  if (op === null) return skipOf('bad_field', `unknown operation ${str(rawOp)}`, coll, opLabel, at)
  if (typeof c.rev !== 'string') return skipOf('missing_field', 'missing commit.rev', coll, op, at)
  if (!isValidTid(c.rev)) return skipOf('bad_rev', `rev is not a TID: ${str(c.rev)}`, coll, op, at)
  if (typeof c.rkey !== 'string')
    return skipOf('missing_field', 'missing commit.rkey', coll, op, at)
  if (!isValidRecordKey(c.rkey)) return skipOf('bad_rkey', `bad rkey ${str(c.rkey)}`, coll, op, at)

  let cid: string | null = null
  let record: unknown = null
  let sanitized = false
  if (op !== 'delete') {
    if (c.record === undefined || c.record === null)
      return skipOf('missing_field', 'missing commit.record', coll, op, at)
    if (!isObject(c.record))
      return skipOf('bad_record', 'commit.record is not an object', coll, op, at)
    if (typeof c.cid !== 'string')
      return skipOf('missing_field', 'missing commit.cid', coll, op, at)
    if (!isCid(c.cid)) return skipOf('bad_cid', `bad cid ${str(c.cid)}`, coll, op, at)
    cid = c.cid
    try {
      const clean = sanitizeJson(c.record, 0)
      record = clean
      sanitized = clean !== c.record
    } catch (err) {
      return skipOf('bad_record', (err as Error).message, coll, op, at)
    }
  }
  const event: IndexEvent = {
    kind: 'commit',
    did: base.did,
    collection: coll,
    rkey: c.rkey,
    rev: c.rev,
    op,
    cid,
    record,
    timeUs: at,
  }
  return { ok: true, item: { event, cursor: at, timeUs: at }, unverifiedHandle: null, sanitized }
}

function normalizeAccount(v: Json, did: string, timeUs: number): NormalizeResult {
  const a = v.account
  if (!isObject(a)) return skipOf('missing_field', 'missing account', 'unknown', 'account', timeUs)
  if (typeof a.active !== 'boolean')
    return skipOf('missing_field', 'missing account.active', 'unknown', 'account', timeUs)
  if (a.status !== undefined && a.status !== null && typeof a.status !== 'string')
    return skipOf('bad_field', 'account.status is not a string', 'unknown', 'account', timeUs)
  const event: IndexEvent = {
    kind: 'account',
    did,
    active: a.active,
    status: (a.status as string | undefined) ?? null,
    seq: seqOf(a.seq),
    timeUs,
  }
  return {
    ok: true,
    item: { event, cursor: timeUs, timeUs },
    unverifiedHandle: null,
    sanitized: false,
  }
}

function normalizeIdentity(v: Json, did: string, timeUs: number): NormalizeResult {
  const i = v.identity
  if (!isObject(i))
    return skipOf('missing_field', 'missing identity', 'unknown', 'identity', timeUs)
  // An absent or malformed handle needs no lookup: it is stored as absent either way.
  const handle = typeof i.handle === 'string' && isValidHandle(i.handle) ? i.handle : null
  const event: IndexEvent = { kind: 'identity', did, handle: null, seq: seqOf(i.seq), timeUs }
  return {
    ok: true,
    item: { event, cursor: timeUs, timeUs },
    unverifiedHandle: handle,
    sanitized: false,
  }
}

function rawTimeUs(v: Json): number | undefined {
  const t = v.time_us
  return typeof t === 'number' && Number.isSafeInteger(t) && t >= 0 ? t : undefined
}

function filtered(timeUs: number): NormalizeOk {
  return {
    ok: true,
    item: { event: null, cursor: timeUs, timeUs },
    unverifiedHandle: null,
    sanitized: false,
  }
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

function seqOf(v: unknown): number | null {
  return typeof v === 'number' && Number.isSafeInteger(v) ? v : null
}

// Loose on purpose: Jetstream has already checked the commit, and test fixtures across the
// project use fake CIDs; this only keeps empty or absurd values out of the database.
function isCid(s: string): boolean {
  return s.length > 0 && s.length <= 256 && !/\s/.test(s)
}

/** Shortened and quoted, for log details: input is untrusted and may be huge. */
export function str(v: unknown): string {
  const s = typeof v === 'string' ? JSON.stringify(v) : String(v)
  return s.length > 80 ? `${s.slice(0, 80)}…` : s
}

export { recordSkip, type SkipDeps } from './record-skip.ts'
