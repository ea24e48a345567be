import { isValidDid, isValidTid } from '@atproto/syntax'
import { seqCursor } from '../../model/cursor.ts'
import type { SourceItem } from '../../model/events.ts'
import { jetstreamSeqOf, normalizeJetstreamEvent } from './event.ts'
import {
  isObject,
  type NormalizeOptions,
  type NormalizeSkip,
  type SkipReason,
  skipOf,
  str,
} from './skip.ts'

// Jetstream v2 `subscribeEvents` frames (notes/jetstream-v2.md section 4) → what the source
// acts on. Pure. Commit, identity and account payloads are rewritten into the v1 shape and
// go through the v1 normalizer, so both wires share one definition of a valid event.

const NS = 'network.bsky.jetstream.subscribeEvents'

export type V2Frame =
  | {
      type: 'item'
      seq: number
      /** `event` is null for collections we do not keep: only the cursor moves. */
      item: SourceItem
      unverifiedHandle: string | null
    }
  | { type: 'sync'; seq: number; did: string; rev: string; timeUs: number }
  | { type: 'info'; name: string; message: string }
  | { type: 'error'; error: string; message: string }
  /** Bad or unknown input; `seq`/`timeUs` when readable, so the cursor can move past it. */
  | { type: 'skip'; skip: NormalizeSkip; seq?: number; timeUs?: number; unknownType?: boolean }

type Json = Record<string, unknown>
type SkipFrame = Extract<V2Frame, { type: 'skip' }>

export function parseV2Frame(text: string, opts: NormalizeOptions): V2Frame {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    return skip('invalid_json', (err as Error).message.slice(0, 200))
  }
  if (!isObject(value)) return skip('not_object', 'frame is not an object')
  if (value.$type === 'error')
    return { type: 'error', error: strOr(value.error, 'unknown'), message: strOr(value.message) }
  if (value.$type !== 'message') return skip('unknown_kind', `unknown envelope ${str(value.$type)}`)
  const p = value.payload
  if (!isObject(p)) return skip('missing_field', 'message without payload')
  const type = typeof p.$type === 'string' ? p.$type.replace(NS, '') : null
  if (type === '#info')
    return { type: 'info', name: strOr(p.name, 'unknown'), message: strOr(p.message) }
  return payloadFrame(type, p, opts)
}

function payloadFrame(type: string | null, p: Json, opts: NormalizeOptions): V2Frame {
  const op = type === '#commit' ? String(p.operation ?? 'unknown') : (type?.slice(1) ?? 'unknown')
  const label = opLabel(op)
  const timeUs = timeUsOf(p.time)
  const seq = jetstreamSeqOf(p.seq)
  const at = { ...(seq === null ? {} : { seq }), ...(timeUs === undefined ? {} : { timeUs }) }
  if (type !== '#commit' && type !== '#identity' && type !== '#account' && type !== '#sync') {
    const detail = `unknown payload type ${str(p.$type)}`
    return { ...skip('unknown_kind', detail, 'unknown', at), unknownType: true }
  }
  if (p.seq === undefined) return skip('missing_field', 'missing seq', label)
  if (seq === null) return skip('bad_seq', `bad seq ${str(p.seq)}`, label)
  if (p.time === undefined) return skip('missing_field', 'missing time', label, { seq })
  if (timeUs === undefined) return skip('bad_field', `bad time ${str(p.time)}`, label, { seq })
  if (type === '#sync') return syncFrame(p, seq, timeUs)
  const v1: Json = { did: p.did, time_us: timeUs, kind: type.slice(1) }
  if (type === '#commit') {
    const { seq: _s, time: _t, did: _d, $type: _y, ...commit } = p
    v1.commit = commit
  } else {
    v1[type.slice(1)] = p[type.slice(1)]
  }
  const res = normalizeJetstreamEvent(v1, opts)
  if (!res.ok) return { type: 'skip', skip: res, seq, timeUs }
  const item = { ...res.item, cursor: seqCursor(seq) }
  return { type: 'item', seq, item, unverifiedHandle: res.unverifiedHandle }
}

function syncFrame(p: Json, seq: number, timeUs: number): V2Frame {
  const at = { seq, timeUs }
  const s = p.sync
  if (!isObject(s)) return skip('missing_field', 'missing sync', 'sync', at)
  const did = p.did ?? s.did
  if (typeof did !== 'string' || !isValidDid(did))
    return skip('bad_did', `bad did ${str(did)}`, 'sync', at)
  if (typeof s.rev !== 'string' || !isValidTid(s.rev))
    return skip('bad_rev', `bad sync.rev ${str(s.rev)}`, 'sync', at)
  // A chain-break #sync may carry no blocks; when present they must be lex-json bytes.
  if (s.blocks !== undefined && !isBytes(s.blocks))
    return skip('bad_bytes', 'sync.blocks is not {"$bytes": base64}', 'sync', at)
  return { type: 'sync', seq, did, rev: s.rev, timeUs }
}

// Standard alphabet; padding optional (atproto's lex-json omits it).
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}(?:==)?|[A-Za-z0-9+/]{3}=?)?$/

function isBytes(v: unknown): boolean {
  return isObject(v) && typeof v.$bytes === 'string' && BASE64.test(v.$bytes)
}

const TIME = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$/

/** RFC 3339 → µs since the epoch, keeping the six fractional digits Jetstream sends. */
export function timeUsOf(v: unknown): number | undefined {
  if (typeof v !== 'string') return undefined
  const m = TIME.exec(v)
  if (!m) return undefined
  const secondsMs = Date.parse(`${m[1]}${m[3]}`)
  if (Number.isNaN(secondsMs) || secondsMs < 0) return undefined
  const micros = Number((m[2] ?? '').padEnd(6, '0').slice(0, 6))
  return secondsMs * 1000 + micros
}

function opLabel(op: string): string {
  return ['create', 'update', 'delete', 'identity', 'account', 'sync'].includes(op) ? op : 'unknown'
}

const strOr = (v: unknown, fallback = ''): string => (typeof v === 'string' ? v : fallback)

/** A frame skipped as `reason`; `at` holds its seq and time when they could be read. */
function skip(
  reason: SkipReason,
  detail: string,
  op = 'unknown',
  at: { seq?: number; timeUs?: number } = {},
): SkipFrame {
  return { type: 'skip', skip: skipOf(reason, detail, 'unknown', op), ...at }
}
