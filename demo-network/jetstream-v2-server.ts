import { readFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { WebSocketServer } from 'ws'
import { appendToLog } from './event-log.ts'
import { decide, type GateState, V2_PATH, type V2Rejection } from './jetstream-v2-decide.ts'
import {
  errorFrame,
  storedOf,
  syncPayload,
  type V2Stored,
  v2Envelope,
} from './jetstream-v2-frames.ts'
import { refuse, reply, seqIn } from './jetstream-v2-http.ts'
import {
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

const DICT_PATH = '/xrpc/network.bsky.jetstream.getZstdDictionary'

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

/** The server's state and what it does with it; the handle and the sockets call in here. */
class V2Hub implements GateState {
  readonly log: V2Log = { items: [], base: 0, chars: 0, nextSeq: 1 }
  readonly conns = new Set<V2Conn>()
  readonly requests: V2Request[] = []
  readonly counters: PumpCounters = { sent: 0, wireBytes: 0, textBytes: 0 }
  readonly rejections: V2Rejection[] = []
  dict: V2Conn['dictionary']
  floor = 1
  mute = false
  readonly #o: V2ServerOptions

  constructor(o: V2ServerOptions) {
    this.#o = o
    this.dict = o.dictionary ? { id: dictionaryIdOf(o.dictionary) ?? 0, bytes: o.dictionary } : null
  }

  lastUs(): number {
    return this.log.items.at(-1)?.timeUs ?? 0
  }

  push(stored: V2Stored[]): void {
    appendToLog(this.log, stored, charsOf, this.#o.maxLogEvents, this.#o.maxLogBytes)
    for (const c of this.conns) c.wake?.()
  }

  append(events: unknown[]): void {
    const stored = events.map((e) => storedOf(e, this.log.nextSeq++, this.lastUs()))
    const dict = this.dict
    if (this.#o.precompress && dict) for (const e of stored) precompress(e, dict)
    this.push(stored)
  }

  appendSync(did: string, rev: string, creates: unknown[], blocks?: string): void {
    const sync = { ...syncPayload(did, rev, this.lastUs(), blocks), seq: this.log.nextSeq++ }
    const marker: V2Stored = {
      ...storedOf({}, sync.seq, this.lastUs()),
      v2: v2Envelope(sync),
      v1: '',
    }
    const rows = creates.map((e) => ({ ...storedOf(e, this.log.nextSeq++, this.lastUs()), v1: '' }))
    this.push([marker, ...rows])
  }

  appendRaw(texts: string[]): void {
    for (const t of texts) {
      // A frame naming a seq takes it, so later appends stay in order after it.
      const seq = seqIn(t)
      if (seq !== null) this.log.nextSeq = Math.max(this.log.nextSeq, seq + 1)
      const at = { seq: seq ?? this.log.nextSeq - 1, timeUs: this.lastUs() }
      this.push([{ ...at, collection: null, kind: null, v2: t, v1: '' }])
    }
  }

  v2Conns(): V2Conn[] {
    return [...this.conns].filter((c) => c.wire === 'v2')
  }

  setDictionary(bytes: Buffer, live: boolean): void {
    const dict = { id: dictionaryIdOf(bytes) ?? 0, bytes }
    this.dict = dict
    if (live) for (const c of this.v2Conns()) if (c.dictionary) c.dictionary = dict
  }

  /** Plain HTTP: the dictionary, and refusals of what only answers an upgrade. */
  serveHttp(req: IncomingMessage, res: ServerResponse): void {
    const u = new URL(req.url ?? '/', 'http://localhost')
    const dict = this.dict
    if (u.pathname === DICT_PATH && dict) {
      const want = u.searchParams.get('id')
      if (want !== null && Number(want) !== dict.id) {
        reply(res, 404, 'DictionaryNotFound', `current dictionary is ${dict.id}`)
        return
      }
      res.writeHead(200, {
        'content-type': 'application/octet-stream',
        etag: `"zstd-dict-${dict.id}"`,
        'x-zstd-dictionary-id': String(dict.id),
      })
      res.end(dict.bytes)
    } else if (u.pathname === V2_PATH) {
      reply(res, 426, 'InvalidRequest', 'websocket upgrade required')
    } else {
      reply(res, 404, 'NotFound', 'not found')
    }
  }

  upgrade(wss: WebSocketServer, req: IncomingMessage, socket: Socket, head: Buffer): void {
    const u = new URL(req.url ?? '/', 'http://localhost')
    const decision = decide(u, this)
    this.requests.push({ path: u.pathname, params: u.searchParams, status: decision.status })
    if (decision.status !== 101) {
      refuse(socket, decision.status, decision.error ?? 'Error', decision.message ?? '')
      return
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const conn = newConn(ws, decision.wire, decision.start, decision.wanted, decision.dict)
      if (decision.info) conn.preamble.push(decision.info)
      track(this.conns, conn)
      // Server-push only (section 2): any client data frame closes with 1008.
      ws.on('message', () => ws.close(1008, 'client messages are not accepted'))
      if (!this.mute) {
        pump(conn, this.log, this.counters, this.#o.eventsPerSecond).catch(() => ws.terminate())
      }
    })
  }
}

export async function startJetstreamV2Server(o: V2ServerOptions = {}): Promise<JetstreamV2Server> {
  const host = o.host ?? '127.0.0.1'
  const hub = new V2Hub(o)
  const http = createServer((req, res) => hub.serveHttp(req, res))
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false })
  http.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) =>
    hub.upgrade(wss, req, socket, head),
  )
  const origin = `ws://${host}:${await listen(http, o.port ?? 0, host)}`
  return serverHandle<Omit<JetstreamV2Server, keyof LogServerHandle>>(
    { conns: hub.conns, log: hub.log, wss, http },
    {
      origin,
      url: `${origin}${V2_PATH}`,
      v1Url: `${origin}/subscribe`,
      requests: hub.requests,
      counters: hub.counters,
      get lastSeq() {
        return hub.log.nextSeq - 1
      },
      get floor() {
        return hub.floor
      },
      set floor(v: number) {
        hub.floor = v
      },
      get mute() {
        return hub.mute
      },
      set mute(v: boolean) {
        hub.mute = v
      },
      append: (events) => hub.append(events),
      appendSync: (did, rev, creates, blocks) => hub.appendSync(did, rev, creates, blocks),
      appendRaw: (texts) => hub.appendRaw(texts),
      rejectNext: (...r) => void hub.rejections.push(...r),
      sendError(error, message) {
        for (const c of hub.v2Conns()) c.ws.send(errorFrame(error, message), () => c.ws.terminate())
      },
      closeGoingAway() {
        for (const c of hub.conns) c.ws.close(1001, 'server shutting down')
      },
      setDictionary: (bytes, live = false) => hub.setDictionary(bytes, live),
    },
  )
}
