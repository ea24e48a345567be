import { createServer, type IncomingMessage } from 'node:http'
import { WebSocket, WebSocketServer } from 'ws'
import { appendToLog, type EventLog, walkLog } from './event-log.ts'
import {
  type LogServerHandle,
  listen,
  type SocketReader,
  serverHandle,
  track,
} from './ws-server.ts'

// A local Jetstream v1 `/subscribe` endpoint for tests, the demo and benchmarks: it replays
// its log from `cursor` (time_us) and then streams appended events live, like the real one.

/** One Jetstream v1 event as JSON (see SPEC section 5 for the shapes). */
export interface JetstreamJson {
  did: string
  time_us: number
  kind: string
  [key: string]: unknown
}

export interface JetstreamServerOptions {
  /** 0 (default) picks a free port. */
  port?: number
  host?: string
  /** The log to start with, in time_us order. */
  events?: Array<JetstreamJson | string>
  /** Per-connection send rate, for demos; unlimited when absent. */
  eventsPerSecond?: number
  /**
   * Keep only this many newest events (the replay window of a real Jetstream is about a
   * day); an unbounded demo would otherwise grow without limit. Default: keep everything.
   */
  maxLogEvents?: number
  /**
   * Keep the newest events whose JSON texts add up to at most this many characters (about
   * bytes: the JSON is ASCII but for non-Latin text). Records vary from 1 KB to 200 KB, so a
   * count alone does not bound memory. Default: no byte bound.
   */
  maxLogBytes?: number
}

export interface SubscribeRequest {
  cursor: number | null
  wantedCollections: string[]
}

/** `logChars`: characters of JSON text in the log. */
export interface JetstreamServer extends LogServerHandle {
  /** `ws://127.0.0.1:<port>/subscribe` */
  readonly url: string
  /** Frames handed to sockets, over all connections (a slow client holds this back). */
  readonly sent: number
  /**
   * Subscribe requests received, oldest first (lets tests check resume cursors); the
   * newest MAX_REQUESTS only, so a client reconnecting for hours cannot grow it.
   */
  readonly requests: SubscribeRequest[]
  /**
   * Adds events to the log (in time_us order) and streams them to live subscribers.
   * A string is sent verbatim (tests use it for malformed frames).
   */
  append(events: Array<JetstreamJson | string>): void
}

interface Stored {
  timeUs: number
  /** Null for account / identity events and unreadable frames: those are always sent. */
  collection: string | null
  text: string
}

type Log = EventLog<Stored>
const charsOf = (e: Stored) => e.text.length

interface Conn extends SocketReader {
  wanted: Matcher
}

type Matcher = (collection: string | null) => boolean

// Above this many unsent bytes a connection waits for its socket to drain: a slow
// client then slows its own stream instead of growing the server's memory.
const HIGH_WATER_BYTES = 1 << 20
const MAX_REQUESTS = 10_000

export async function startJetstreamServer(
  opts: JetstreamServerOptions = {},
): Promise<JetstreamServer> {
  const host = opts.host ?? '127.0.0.1'
  const log: Log = { items: [], base: 0, chars: 0 }
  const conns = new Set<Conn>()
  const requests: SubscribeRequest[] = []
  const counter = { sent: 0 }

  const append = (events: Array<JetstreamJson | string>) => {
    for (const e of events) {
      const stored = toStored(e, log.items.at(-1)?.timeUs ?? 0)
      appendToLog(log, [stored], charsOf, opts.maxLogEvents, opts.maxLogBytes)
    }
    for (const c of conns) c.wake?.()
  }
  append(opts.events ?? [])

  const http = createServer((_req, res) => {
    res.writeHead(404).end('use the websocket endpoint /subscribe\n')
  })
  const wss = new WebSocketServer({ server: http, path: '/subscribe' })
  wss.on('connection', (ws, req) => {
    const { cursor, wantedCollections } = parseRequest(req)
    requests.push({ cursor, wantedCollections })
    if (requests.length > MAX_REQUESTS) requests.splice(0, requests.length - MAX_REQUESTS)
    // No cursor: the live tip. A cursor older than the log: its start (Jetstream clamps too).
    const start = cursor === null ? -1 : log.items.findIndex((e) => e.timeUs >= cursor)
    const conn: Conn = {
      ws,
      next: log.base + (start === -1 ? log.items.length : start),
      wanted: matcherOf(wantedCollections),
      closed: false,
      wake: null,
    }
    track(conns, conn)
    // Clients only send options updates, which this server does not implement.
    ws.on('message', () => {})
    walkLog(conn, log, {
      pick: (e) => (conn.wanted(e.collection) ? e.text : null),
      send: (text) => send(conn, text, counter),
      rate: opts.eventsPerSecond,
    }).catch(() => ws.terminate())
  })

  const port = await listen(http, opts.port ?? 0, host)

  return serverHandle<Omit<JetstreamServer, keyof LogServerHandle>>(
    { conns, log, wss, http },
    {
      url: `ws://${host}:${port}/subscribe`,
      get sent() {
        return counter.sent
      },
      requests,
      append,
    },
  )
}

/** Sends one frame, waiting for the socket to drain above the high-water mark. */
async function send(c: Conn, text: string, counter: { sent: number }): Promise<boolean> {
  if (c.ws.readyState !== WebSocket.OPEN) return false
  if (c.ws.bufferedAmount > HIGH_WATER_BYTES) {
    await new Promise<void>((resolve) => c.ws.send(text, () => resolve()))
  } else {
    c.ws.send(text)
  }
  counter.sent++
  return true
}

function toStored(e: JetstreamJson | string, previousUs: number): Stored {
  let value: unknown = e
  const text = typeof e === 'string' ? e : JSON.stringify(e)
  if (typeof e === 'string') {
    try {
      value = JSON.parse(e)
    } catch {
      value = null
    }
  }
  const v = (value ?? {}) as Partial<JetstreamJson> & { commit?: { collection?: unknown } }
  const timeUs = typeof v.time_us === 'number' ? v.time_us : previousUs
  const collection =
    v.kind === 'commit' && typeof v.commit?.collection === 'string' ? v.commit.collection : null
  return { timeUs, collection, text }
}

function parseRequest(req: IncomingMessage): SubscribeRequest {
  const u = new URL(req.url ?? '/', 'http://localhost')
  const raw = u.searchParams.get('cursor')
  const n = raw === null ? Number.NaN : Number(raw)
  return {
    cursor: Number.isSafeInteger(n) ? n : null,
    wantedCollections: u.searchParams.getAll('wantedCollections'),
  }
}

/** Exact NSIDs and `prefix.*` patterns; no patterns means everything. */
function matcherOf(wanted: string[]): Matcher {
  if (wanted.length === 0) return () => true
  const exact = new Set(wanted.filter((w) => !w.endsWith('.*')))
  const prefixes = wanted.filter((w) => w.endsWith('.*')).map((w) => w.slice(0, -1))
  return (collection) =>
    collection === null || exact.has(collection) || prefixes.some((p) => collection.startsWith(p))
}
