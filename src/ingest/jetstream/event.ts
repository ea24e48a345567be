import {
  isValidDid,
  isValidHandle,
  isValidNsid,
  isValidRecordKey,
  isValidTid,
} from '@atproto/syntax'
import { seqCursor, timeCursor } from '../../model/cursor.ts'
import type { CommitOp, IndexEvent } from '../../model/events.ts'
import { sanitizeJson } from './sanitize-json.ts'
import {
  checkBase,
  isObject,
  type Json,
  type NormalizeOk,
  type NormalizeOptions,
  type NormalizeResult,
  type NormalizeSkip,
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
  return okAt(event, timeUs)
}

function normalizeIdentity(v: Json, did: string, timeUs: number): NormalizeResult {
  const i = v.identity
  if (!isObject(i))
    return skipOf('missing_field', 'missing identity', 'unknown', 'identity', timeUs)
  // An absent or malformed handle needs no lookup: it is stored as absent either way.
  const handle = typeof i.handle === 'string' && isValidHandle(i.handle) ? i.handle : null
  const event: IndexEvent = { kind: 'identity', did, handle: null, seq: seqOf(i.seq), timeUs }
  return okAt(event, timeUs, handle)
}

function seqOf(v: unknown): number | null {
  return typeof v === 'number' && Number.isSafeInteger(v) ? v : null
}

// A Jetstream v1 commit → a CommitEvent, or the first reason it is not one. Other
// collections' commits only move the cursor.

const OPS: ReadonlySet<string> = new Set(['create', 'update', 'delete'])

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
    if (timeUs !== undefined) return okAt(null, timeUs)
    // Not our collection, but a position all the same: refused unless its envelope reads.
    const base = checkBase(v, rawTimeUs(v), 'unknown', opLabel)
    return base.ok ? okAt(null, base.timeUs) : base
  }
  const base = checkBase(v, rawTimeUs(v), coll, opLabel)
  if (!base.ok) return base
  const at = base.timeUs
  const fields = checkCommitFields(c, coll, rawOp, op, at)
  if (!fields.ok) return fields
  const body = fields.op === 'delete' ? DELETED : readRecord(c, coll, fields.op, at)
  if (!body.ok) return body
  const event: IndexEvent = {
    kind: 'commit',
    did: base.did,
    collection: coll,
    rkey: fields.rkey,
    rev: fields.rev,
    op: fields.op,
    cid: body.cid,
    record: body.record,
    timeUs: at,
  }
  return okAt(event, at, null, body.sanitized)
}

/** The first problem of a kept collection's commit fields, in the order they are checked. */
function checkCommitFields(
  c: Json,
  coll: string,
  rawOp: unknown,
  op: CommitOp | null,
  at: number,
): NormalizeSkip | { ok: true; op: CommitOp; rev: string; rkey: string } {
  const opLabel = op ?? 'unknown'
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
  return { ok: true, op, rev: c.rev, rkey: c.rkey }
}

interface RecordBody {
  ok: true
  cid: string | null
  record: unknown
  sanitized: boolean
}

const DELETED: RecordBody = { ok: true, cid: null, record: null, sanitized: false }

/** A create's or update's record and CID, with bad strings of the record replaced. */
function readRecord(c: Json, coll: string, op: CommitOp, at: number): RecordBody | NormalizeSkip {
  if (c.record === undefined || c.record === null)
    return skipOf('missing_field', 'missing commit.record', coll, op, at)
  if (!isObject(c.record))
    return skipOf('bad_record', 'commit.record is not an object', coll, op, at)
  if (typeof c.cid !== 'string') return skipOf('missing_field', 'missing commit.cid', coll, op, at)
  if (!isCid(c.cid)) return skipOf('bad_cid', `bad cid ${str(c.cid)}`, coll, op, at)
  try {
    const clean = sanitizeJson(c.record, 0)
    return { ok: true, cid: c.cid, record: clean, sanitized: clean !== c.record }
  } catch (err) {
    return skipOf('bad_record', (err as Error).message, coll, op, at)
  }
}

/** An event read at `timeUs` (null: a collection we do not keep, only the cursor moves). */
function okAt(
  event: IndexEvent | null,
  timeUs: number,
  unverifiedHandle: string | null = null,
  sanitized = false,
): NormalizeOk {
  return {
    ok: true,
    item: { event, cursor: timeCursor(timeUs), timeUs },
    unverifiedHandle,
    sanitized,
  }
}

// Loose on purpose: Jetstream has already checked the commit, and test fixtures across the
// project use fake CIDs; this only keeps empty or absurd values out of the database.
function isCid(s: string): boolean {
  return s.length > 0 && s.length <= 256 && !/\s/.test(s)
}
