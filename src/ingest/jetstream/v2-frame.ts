import { isValidDid, isValidTid } from '@atproto/syntax'
import { seqCursor } from '../../model/cursor.ts'
import type { SourceItem } from '../../model/events.ts'
import { jetstreamSeqOf, normalizeJetstreamEvent } from './event.ts'
import { isObject, type NormalizeOptions, type NormalizeSkip, skipOf, str } from './skip.ts'

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

export function parseV2Frame(text: string, opts: NormalizeOptions): V2Frame {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    return skip(skipOf('invalid_json', (err as Error).message.slice(0, 200), 'unknown', 'unknown'))
  }
  if (!isObject(value))
    return skip(skipOf('not_object', 'frame is not an object', 'unknown', 'unknown'))
  if (value.$type === 'error') {
    return {
      type: 'error',
      error: typeof value.error === 'string' ? value.error : 'unknown',
      message: typeof value.message === 'string' ? value.message : '',
    }
  }
  if (value.$type !== 'message')
    return skip(
      skipOf('unknown_kind', `unknown envelope ${str(value.$type)}`, 'unknown', 'unknown'),
    )
  const p = value.payload
  if (!isObject(p))
    return skip(skipOf('missing_field', 'message without payload', 'unknown', 'unknown'))
  const type = typeof p.$type === 'string' ? p.$type.replace(NS, '') : null
  if (type === '#info') {
    return {
      type: 'info',
      name: typeof p.name === 'string' ? p.name : 'unknown',
      message: typeof p.message === 'string' ? p.message : '',
    }
  }
  return payloadFrame(type, p, opts)
}

function payloadFrame(type: string | null, p: Json, opts: NormalizeOptions): V2Frame {
  const op = type === '#commit' ? String(p.operation ?? 'unknown') : (type?.slice(1) ?? 'unknown')
  const timeUs = timeUsOf(p.time)
  const seq = jetstreamSeqOf(p.seq)
  const at = { ...(seq === null ? {} : { seq }), ...(timeUs === undefined ? {} : { timeUs }) }
  if (type !== '#commit' && type !== '#identity' && type !== '#account' && type !== '#sync') {
    const s = skipOf('unknown_kind', `unknown payload type ${str(p.$type)}`, 'unknown', 'unknown')
    return { ...skip(s), ...at, unknownType: true }
  }
  const label = 'unknown'
  if (p.seq === undefined) return skip(skipOf('missing_field', 'missing seq', label, opLabel(op)))
  if (seq === null) return skip(skipOf('bad_seq', `bad seq ${str(p.seq)}`, label, opLabel(op)))
  if (p.time === undefined)
    return { ...skip(skipOf('missing_field', 'missing time', label, opLabel(op))), seq }
  if (timeUs === undefined)
    return { ...skip(skipOf('bad_field', `bad time ${str(p.time)}`, label, opLabel(op))), seq }
  if (type === '#sync') return syncFrame(p, seq, timeUs)
  const v1: Json = { did: p.did, time_us: timeUs, kind: type.slice(1) }
  if (type === '#commit') {
    const { seq: _s, time: _t, did: _d, $type: _y, ...commit } = p
    v1.commit = commit
  } else {
    v1[type.slice(1)] = p[type.slice(1)]
  }
  const res = normalizeJetstreamEvent(v1, opts)
  if (!res.ok) return { ...skip(res), seq, timeUs }
  return {
    type: 'item',
    seq,
    item: { ...res.item, cursor: seqCursor(seq) },
    unverifiedHandle: res.unverifiedHandle,
  }
}

function syncFrame(p: Json, seq: number, timeUs: number): V2Frame {
  const at = { seq, timeUs }
  const s = p.sync
  if (!isObject(s))
    return { ...skip(skipOf('missing_field', 'missing sync', 'unknown', 'sync')), ...at }
  const did = p.did ?? s.did
  if (typeof did !== 'string' || !isValidDid(did))
    return { ...skip(skipOf('bad_did', `bad did ${str(did)}`, 'unknown', 'sync')), ...at }
  if (typeof s.rev !== 'string' || !isValidTid(s.rev))
    return { ...skip(skipOf('bad_rev', `bad sync.rev ${str(s.rev)}`, 'unknown', 'sync')), ...at }
  // A chain-break #sync may carry no blocks; when present they must be lex-json bytes.
  if (s.blocks !== undefined && !isBytes(s.blocks))
    return {
      ...skip(skipOf('bad_bytes', 'sync.blocks is not {"$bytes": base64}', 'unknown', 'sync')),
      ...at,
    }
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

function skip(s: NormalizeSkip): Extract<V2Frame, { type: 'skip' }> {
  return { type: 'skip', skip: s }
}
