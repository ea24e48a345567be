import { zstdCompressSync } from 'node:zlib'
import { WebSocket } from 'ws'
import { type EventLog, type LogReader, walkLog } from './event-log.ts'
import { collectionMatcher, type V2Stored } from './jetstream-v2-frames.ts'

// The log and the per-connection sender of the local Jetstream v2 server: every connection
// walks the shared log from its start index and then waits for appends.

export interface V2Log extends EventLog<V2Stored> {
  nextSeq: number
}

export interface V2Conn extends LogReader {
  ws: WebSocket
  wire: 'v1' | 'v2'
  wanted: (collection: string | null) => boolean
  /** Non-null: frames go out as zstd with this dictionary (binary messages). */
  dictionary: { id: number; bytes: Buffer } | null
  /** Frames sent before the log (an `#info OutdatedCursor`). */
  preamble: string[]
}

export interface PumpCounters {
  sent: number
  /** Bytes handed to sockets, and what they would have been as text. */
  wireBytes: number
  textBytes: number
}

const HIGH_WATER_BYTES = 1 << 20

export function newConn(
  ws: WebSocket,
  wire: 'v1' | 'v2',
  next: number,
  wanted: string[],
  dictionary: V2Conn['dictionary'],
): V2Conn {
  return {
    ws,
    wire,
    next,
    wanted: collectionMatcher(wanted),
    dictionary,
    closed: false,
    wake: null,
    preamble: [],
  }
}

export function encodeFrame(text: string, dictionary: V2Conn['dictionary']): string | Buffer {
  if (!dictionary) return text
  return zstdCompressSync(Buffer.from(text), { dictionary: dictionary.bytes })
}

export function precompress(e: V2Stored, dictionary: NonNullable<V2Conn['dictionary']>): void {
  e.zstd = { id: dictionary.id, z: encodeFrame(e.v2, dictionary) as Buffer }
}

function frameOf(c: V2Conn, e: V2Stored): string | Buffer | null {
  if (c.wire === 'v1') return e.v1 === '' ? null : e.v1
  if (!c.dictionary) return e.v2
  if (e.zstd?.id === c.dictionary.id) return e.zstd.z
  const z = encodeFrame(e.v2, c.dictionary) as Buffer
  e.zstd = { id: c.dictionary.id, z }
  return z
}

async function send(c: V2Conn, frame: string | Buffer, text: string, counters: PumpCounters) {
  if (c.ws.bufferedAmount > HIGH_WATER_BYTES) {
    await new Promise<void>((resolve) => c.ws.send(frame, () => resolve()))
  } else {
    c.ws.send(frame)
  }
  counters.sent++
  counters.wireBytes += frame.length
  counters.textBytes += Buffer.byteLength(text)
}

/** Sends the log to one connection until it closes; `rate` limits events per second. */
export async function pump(c: V2Conn, log: V2Log, counters: PumpCounters, rate?: number) {
  for (const text of c.preamble.splice(0)) {
    if (c.ws.readyState !== WebSocket.OPEN) return
    await send(c, encodeFrame(text, c.dictionary), text, counters)
  }
  await walkLog(c, log, {
    pick: (e) => (c.wanted(e.collection) ? frameOf(c, e) : null),
    send: async (frame, e) => {
      if (c.ws.readyState !== WebSocket.OPEN) return false
      await send(c, frame, c.wire === 'v1' ? e.v1 : e.v2, counters)
      return true
    },
    rate,
  })
}

/** Index of the first item with seq >= `seq` (the log is in seq order). */
export function indexOfSeq(log: V2Log, seq: number): number {
  let lo = 0
  let hi = log.items.length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (log.items[mid].seq < seq) lo = mid + 1
    else hi = mid
  }
  return log.base + lo
}

/** Index of the first item witnessed at or after `timeUs` (time order = seq order here). */
export function indexOfTime(log: V2Log, timeUs: number): number {
  const i = log.items.findIndex((e) => e.timeUs >= timeUs)
  return log.base + (i === -1 ? log.items.length : i)
}
