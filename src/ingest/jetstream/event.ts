import { isValidDid, isValidHandle } from '@atproto/syntax'
import { seqCursor, timeCursor } from '../../model/cursor.ts'
import type { IndexEvent } from '../../model/events.ts'
import { normalizeCommit } from './commit.ts'
import {
  checkBase,
  isObject,
  type Json,
  type NormalizeOptions,
  type NormalizeResult,
  rawTimeUs,
  skipOf,
  str,
} from './skip.ts'
// Jetstream v1 JSON (also the replay file format) → normalized SourceItem. Pure: no I/O,
// so every source and test shares one definition of "bad input".

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
  // A v2 server adds its own `seq` as `cursor` to v1 frames: the better resume point (SPEC 5),
  // so the line's position is that seq instead of its time_us.
  const seq = opts.seqCursor ? jetstreamSeqOf(value.cursor) : null
  if (seq === null) return res
  if (res.ok) res.item.cursor = seqCursor(seq)
  else res.seq = seq
  return res
}

/** A Jetstream seq: a positive safe integer. */
export function jetstreamSeqOf(v: unknown): number | null {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 1 ? v : null
}

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
    item: { event, cursor: timeCursor(timeUs), timeUs },
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
    item: { event, cursor: timeCursor(timeUs), timeUs },
    unverifiedHandle: handle,
    sanitized: false,
  }
}

function seqOf(v: unknown): number | null {
  return typeof v === 'number' && Number.isSafeInteger(v) ? v : null
}
