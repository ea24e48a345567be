import { infoFrame } from './jetstream-v2-frames.ts'
import { invalid } from './jetstream-v2-http.ts'
import { indexOfSeq, indexOfTime, type V2Conn, type V2Log } from './jetstream-v2-pump.ts'

// How the local Jetstream v2 answers an upgrade request: refused (with the status and error
// the real server gives), or accepted on a wire, from a log position, with a dictionary.

export const V2_PATH = '/xrpc/network.bsky.jetstream.subscribeEvents'

export interface V2Rejection {
  status: number
  error: string
  message?: string
}

export interface Decision extends Partial<V2Rejection> {
  status: number
  wire: 'v1' | 'v2'
  start: number
  wanted: string[]
  dict: V2Conn['dictionary']
  /** An #info frame sent before the events (an outdated time cursor). */
  info?: string
}

/** What the answer depends on: the log, its floor, the dictionary and queued refusals. */
export interface GateState {
  log: V2Log
  floor: number
  dict: V2Conn['dictionary']
  /** Refusals queued by a test, taken one per v2 request. */
  rejections: V2Rejection[]
}

type Base = Omit<Decision, 'wire'>

// The server's own rule, as the real one has it: a `cursor` query value at or above this is
// unix microseconds, below it a seq (SPEC 5). Only the server reads a number by its size;
// the client's cursors say their kind (src/model/cursor.ts).
const TIMESTAMP_CURSOR = 1e15

export function decide(u: URL, s: GateState): Decision {
  const base = { status: 101, start: s.log.base + s.log.items.length, dict: null, wanted: [] }
  if (u.pathname === '/subscribe') return decideV1(u, base, s)
  if (u.pathname !== V2_PATH) return { ...base, wire: 'v2', status: 404, error: 'NotFound' }
  const queued = s.rejections.shift()
  if (queued) return { ...base, wire: 'v2', ...queued }
  const bad = invalid(u.searchParams)
  if (bad) return { ...base, wire: 'v2', status: 400, error: 'InvalidRequest', message: bad }
  return decideV2(u, base, s)
}

function decideV1(u: URL, base: Base, s: GateState): Decision {
  const wanted = u.searchParams.getAll('wantedCollections')
  const cursor = Number(u.searchParams.get('cursor') ?? Number.NaN)
  // v1 on a v2 server: seq or time cursors, both clamp silently to the floor.
  const start = Number.isSafeInteger(cursor) ? startOf(cursor, s).start : base.start
  return { ...base, wire: 'v1', wanted, start }
}

/** A well-formed subscribeEvents request: its dictionary and cursor decide the answer. */
function decideV2(u: URL, base: Base, s: GateState): Decision {
  const zd = u.searchParams.get('zstdDictionary')
  if (zd !== null && (!s.dict || Number(zd) !== s.dict.id)) {
    const message = `unknown zstdDictionary ${zd}; current is ${s.dict?.id ?? 'none'}`
    return { ...base, wire: 'v2', status: 400, error: 'UnknownZstdDictionary', message }
  }
  const wanted = u.searchParams.getAll('collections')
  const raw = u.searchParams.get('cursor')
  const d = zd === null ? null : s.dict
  if (raw === null) return { ...base, wire: 'v2', wanted, dict: d }
  const cursor = Math.max(1, Number(raw))
  if (cursor < TIMESTAMP_CURSOR && cursor < s.floor) {
    const message = `cursor ${cursor} below lookback floor ${s.floor}; re-backfill from your last seq`
    return { ...base, wire: 'v2', status: 400, error: 'CursorTooOld', message }
  }
  return { ...base, wire: 'v2', wanted, dict: d, ...startOf(cursor, s) }
}

function startOf(cursor: number, s: GateState): { start: number; info?: string } {
  const { log } = s
  const floorIndex = Math.max(log.base, indexOfSeq(log, s.floor))
  if (cursor < TIMESTAMP_CURSOR) return { start: Math.max(floorIndex, indexOfSeq(log, cursor)) }
  const floorItem = log.items[floorIndex - log.base]
  if (!floorItem || cursor >= floorItem.timeUs)
    return { start: Math.max(floorIndex, indexOfTime(log, cursor)) }
  const seq = floorItem.seq
  const msg = `requested timestamp cursor below retention floor; starting at seq ${seq}`
  return { start: floorIndex, info: infoFrame('OutdatedCursor', msg) }
}
