import { isValidNsid, isValidRecordKey, isValidTid } from '@atproto/syntax'
import { timeCursor } from '../../model/cursor.ts'
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

// A Jetstream v1 commit → a CommitEvent, or the first reason it is not one. Other
// collections' commits only move the cursor.

const OPS: ReadonlySet<string> = new Set(['create', 'update', 'delete'])

/** `timeUs`: the line's time, only when its DID could be read too (else undefined). */
export function normalizeCommit(
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
  return {
    ok: true,
    item: { event, cursor: timeCursor(at), timeUs: at },
    unverifiedHandle: null,
    sanitized: body.sanitized,
  }
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

function filtered(timeUs: number): NormalizeOk {
  return {
    ok: true,
    item: { event: null, cursor: timeCursor(timeUs), timeUs },
    unverifiedHandle: null,
    sanitized: false,
  }
}

// Loose on purpose: Jetstream has already checked the commit, and test fixtures across the
// project use fake CIDs; this only keeps empty or absurd values out of the database.
function isCid(s: string): boolean {
  return s.length > 0 && s.length <= 256 && !/\s/.test(s)
}
