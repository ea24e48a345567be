import { readFileSync } from 'node:fs'
import { createServer, type IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'
import { WebSocketServer } from 'ws'
import { appendToLog } from './event-log.ts'
import {
  errorFrame,
  infoFrame,
  storedOf,
  syncPayload,
  type V2Stored,
  v2Envelope,
} from './jetstream-v2-frames.ts'
import { invalid, refuse, reply, seqIn } from './jetstream-v2-http.ts'
import {
  indexOfSeq,
  indexOfTime,
  newConn,
  type PumpCounters,
  precompress,
  pump,
  type V2Conn,
  type V2Log,
} from './jetstream-v2-pump.ts'
import { type LogServerHandle, listen, serverHandle, track } from './ws-server.ts'

// A local Jetstream v2 (notes/jetstream-v2.md) for tests, the demo and benchmarks: both
// `subscribeEvents` (seq cursors, CursorTooOld, #info, #sync, error frames, dictionary zstd)
// and the frozen v1 `/subscribe` with its added `cursor` field, over one seq-numbered log.

const NS = 'network.bsky.jetstream'
const V2_PATH = `/xrpc/${NS}.subscribeEvents`
const DICT_PATH = `/xrpc/${NS}.getZstdDictionary`

/** The dictionary the demo and benchmarks serve (trained with `zstd --train` on demo traffic). */
export function demoDictionary(): Buffer {
  return readFileSync(new URL('./jetstream-v2.zdict', import.meta.url))
}

// The server reads the dictionary header itself rather than borrow the reader's (src/ingest):
// the network stands apart from the product it feeds.
const DICT_MAGIC = 0xec30a437

/** The ID of a structured zstd dictionary (RFC 8878 section 5), or null if it is not one. */
function dictionaryIdOf(bytes: Buffer): number | null {
  return bytes.length >= 8 && bytes.readUInt32LE(0) === DICT_MAGIC ? bytes.readUInt32LE(4) : null
}

export interface V2ServerOptions {
  port?: number
  host?: string
  /** Dictionary zstd (raw structured dictionary; its ID is read from the header). */
  dictionary?: Buffer
  eventsPerSecond?: number
  /** Compress each event when appended rather than when first sent (benchmarks). */
  precompress?: boolean
  /** Keep only this many newest events; the oldest kept seq is then the floor. */
  maxLogEvents?: number
  /** And at most this many characters of frame text (both wires' forms). */
  maxLogBytes?: number
}

export interface V2Request {
  path: string
  params: URLSearchParams
  status: number
}

export interface V2Rejection {
  status: number
  error: string
  message?: string
}

export interface JetstreamV2Server extends LogServerHandle {
  /** ws://host:port (no path: clients auto-detect), plus both wires' full URLs. */
  readonly origin: string
  readonly url: string
  readonly v1Url: string
  readonly requests: V2Request[]
  readonly counters: PumpCounters
  /** The newest seq assigned (0: none yet). */
  readonly lastSeq: number
  /** Seqs below this get 400 CursorTooOld. */
  floor: number
  /** Accept upgrades and then send nothing (a stuck upstream). */
  mute: boolean
  append(events: unknown[]): void
  /** A `#sync(did, rev)` marker then `creates` at `rev`: both v2-only (v1 skips them). */
  appendSync(did: string, rev: string, creates: unknown[], blocks?: string): void
  /** Frames sent verbatim on subscribeEvents (bad input); they take no seq. */
  appendRaw(texts: string[]): void
  /** The next connects are refused before the upgrade, in order. */
  rejectNext(...r: V2Rejection[]): void
  /** Error frame to every v2 client, then a drop without a close handshake. */
  sendError(error: string, message: string): void
  closeGoingAway(): void
  /**
   * Retires the dictionary: clients asking for the old ID get UnknownZstdDictionary.
   * `live`: open connections switch too (a server sending frames a client cannot read).
   */
  setDictionary(dictionary: Buffer, live?: boolean): void
}

const charsOf = (e: V2Stored) => e.v1.length + e.v2.length

export async function startJetstreamV2Server(o: V2ServerOptions = {}): Promise<JetstreamV2Server> {
  const host = o.host ?? '127.0.0.1'
  const log: V2Log = { items: [], base: 0, chars: 0, nextSeq: 1 }
  const conns = new Set<V2Conn>()
  const requests: V2Request[] = []
  const counters: PumpCounters = { sent: 0, wireBytes: 0, textBytes: 0 }
  const rejections: V2Rejection[] = []
  let dict = o.dictionary ? { id: dictionaryIdOf(o.dictionary) ?? 0, bytes: o.dictionary } : null
  const state = { floor: 1, mute: false }

  const push = (stored: V2Stored[]) => {
    appendToLog(log, stored, charsOf, o.maxLogEvents, o.maxLogBytes)
    for (const c of conns) c.wake?.()
  }
  const lastUs = () => log.items.at(-1)?.timeUs ?? 0
  const append = (events: unknown[]) => {
    const stored = events.map((e) => storedOf(e, log.nextSeq++, lastUs()))
    if (o.precompress && dict) for (const e of stored) precompress(e, dict)
    push(stored)
  }

  const http = createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://localhost')
    if (u.pathname === DICT_PATH && dict) {
      const want = u.searchParams.get('id')
      if (want !== null && Number(want) !== dict.id)
        return reply(res, 404, 'DictionaryNotFound', `current dictionary is ${dict.id}`)
      res.writeHead(200, {
        'content-type': 'application/octet-stream',
        etag: `"zstd-dict-${dict.id}"`,
        'x-zstd-dictionary-id': String(dict.id),
      })
      return res.end(dict.bytes)
    }
    if (u.pathname === V2_PATH)
      return reply(res, 426, 'InvalidRequest', 'websocket upgrade required')
    reply(res, 404, 'NotFound', 'not found')
  })
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false })
  http.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    const u = new URL(req.url ?? '/', 'http://localhost')
    const decision = decide(u)
    requests.push({ path: u.pathname, params: u.searchParams, status: decision.status })
    if (decision.status !== 101) {
      return refuse(socket, decision.status, decision.error ?? 'Error', decision.message ?? '')
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const conn = newConn(ws, decision.wire, decision.start, decision.wanted, decision.dict)
      if (decision.info) conn.preamble.push(decision.info)
      track(conns, conn)
      // Server-push only (section 2): any client data frame closes with 1008.
      ws.on('message', () => ws.close(1008, 'client messages are not accepted'))
      if (!state.mute) pump(conn, log, counters, o.eventsPerSecond).catch(() => ws.terminate())
    })
  })

  interface Decision extends Partial<V2Rejection> {
    status: number
    wire: 'v1' | 'v2'
    start: number
    wanted: string[]
    dict: V2Conn['dictionary']
    info?: string
  }
  function decide(u: URL): Decision {
    const base = { status: 101, start: log.base + log.items.length, dict: null, wanted: [] }
    if (u.pathname === '/subscribe') return decideV1(u, base)
    if (u.pathname !== V2_PATH) return { ...base, wire: 'v2', status: 404, error: 'NotFound' }
    const queued = rejections.shift()
    if (queued) return { ...base, wire: 'v2', ...queued }
    const bad = invalid(u.searchParams)
    if (bad) return { ...base, wire: 'v2', status: 400, error: 'InvalidRequest', message: bad }
    return decideV2(u, base)
  }

  type Base = Omit<Decision, 'wire'>

  // The server's own rule, as the real one has it: a `cursor` query value at or above this is
  // unix microseconds, below it a seq (SPEC 5). Only the server reads a number by its size;
  // the client's cursors say their kind (src/model/cursor.ts).
  const TIMESTAMP_CURSOR = 1e15

  function decideV1(u: URL, base: Base): Decision {
    const wanted = u.searchParams.getAll('wantedCollections')
    const cursor = Number(u.searchParams.get('cursor') ?? Number.NaN)
    // v1 on a v2 server: seq or time cursors, both clamp silently to the floor.
    const start = Number.isSafeInteger(cursor) ? startOf(cursor).start : base.start
    return { ...base, wire: 'v1', wanted, start }
  }

  /** A well-formed subscribeEvents request: its dictionary and cursor decide the answer. */
  function decideV2(u: URL, base: Base): Decision {
    const zd = u.searchParams.get('zstdDictionary')
    if (zd !== null && (!dict || Number(zd) !== dict.id)) {
      const message = `unknown zstdDictionary ${zd}; current is ${dict?.id ?? 'none'}`
      return { ...base, wire: 'v2', status: 400, error: 'UnknownZstdDictionary', message }
    }
    const wanted = u.searchParams.getAll('collections')
    const raw = u.searchParams.get('cursor')
    const d = zd === null ? null : dict
    if (raw === null) return { ...base, wire: 'v2', wanted, dict: d }
    const cursor = Math.max(1, Number(raw))
    if (cursor < TIMESTAMP_CURSOR && cursor < state.floor) {
      const message = `cursor ${cursor} below lookback floor ${state.floor}; re-backfill from your last seq`
      return { ...base, wire: 'v2', status: 400, error: 'CursorTooOld', message }
    }
    return { ...base, wire: 'v2', wanted, dict: d, ...startOf(cursor) }
  }

  function startOf(cursor: number): { start: number; info?: string } {
    const floorIndex = Math.max(log.base, indexOfSeq(log, state.floor))
    if (cursor < TIMESTAMP_CURSOR) return { start: Math.max(floorIndex, indexOfSeq(log, cursor)) }
    const floorItem = log.items[floorIndex - log.base]
    if (!floorItem || cursor >= floorItem.timeUs)
      return { start: Math.max(floorIndex, indexOfTime(log, cursor)) }
    const seq = floorItem.seq
    const msg = `requested timestamp cursor below retention floor; starting at seq ${seq}`
    return { start: floorIndex, info: infoFrame('OutdatedCursor', msg) }
  }

  const origin = `ws://${host}:${await listen(http, o.port ?? 0, host)}`
  const v2Conns = () => [...conns].filter((c) => c.wire === 'v2')
  return serverHandle<Omit<JetstreamV2Server, keyof LogServerHandle>>(
    { conns, log, wss, http },
    {
      origin,
      url: `${origin}${V2_PATH}`,
      v1Url: `${origin}/subscribe`,
      requests,
      counters,
      get lastSeq() {
        return log.nextSeq - 1
      },
      get floor() {
        return state.floor
      },
      set floor(v: number) {
        state.floor = v
      },
      get mute() {
        return state.mute
      },
      set mute(v: boolean) {
        state.mute = v
      },
      append,
      appendSync(did, rev, creates, blocks) {
        const sync = { ...syncPayload(did, rev, lastUs(), blocks), seq: log.nextSeq++ }
        const marker: V2Stored = {
          ...storedOf({}, sync.seq, lastUs()),
          v2: v2Envelope(sync),
          v1: '',
        }
        const rows = creates.map((e) => ({ ...storedOf(e, log.nextSeq++, lastUs()), v1: '' }))
        push([marker, ...rows])
      },
      appendRaw(texts) {
        for (const t of texts) {
          // A frame naming a seq takes it, so later appends stay in order after it.
          const seq = seqIn(t)
          if (seq !== null) log.nextSeq = Math.max(log.nextSeq, seq + 1)
          const at = { seq: seq ?? log.nextSeq - 1, timeUs: lastUs() }
          push([{ ...at, collection: null, kind: null, v2: t, v1: '' }])
        }
      },
      rejectNext: (...r) => void rejections.push(...r),
      sendError(error, message) {
        for (const c of v2Conns()) {
          c.ws.send(errorFrame(error, message), () => c.ws.terminate())
        }
      },
      closeGoingAway() {
        for (const c of conns) c.ws.close(1001, 'server shutting down')
      },
      setDictionary(bytes, live = false) {
        dict = { id: dictionaryIdOf(bytes) ?? 0, bytes }
        if (live) for (const c of v2Conns()) if (c.dictionary) c.dictionary = dict
      },
    },
  )
}
