import type { IncomingMessage } from 'node:http'
import { WebSocket } from 'ws'
import { type BackoffOptions, backoffMs } from '../faults/backoff.ts'
import { sleepUnlessAborted } from '../faults/timers.ts'
import type { Sink } from '../model/events.ts'
import type { Metrics } from '../observe/metrics.ts'

// The one runner of every network source: a Wire says the next URL (from its cursor), decodes
// and hands on frames (its cursor policy) and what an end means; the runner reconnects.
// Each connection is one WsSession: frames as an async iterator, reading paused while the
// consumer holds `readAhead` of them (TCP pushes back), a dead or silent upstream cut, and an
// end only once every frame read was handed over, so a reconnect never races the last one.

/** What an end means: reconnect after the backoff, reconnect at once, or stop the source. */
export type NextStep = 'retry' | 'now' | 'stop'

/** What a connection's frame handler says after a frame. */
export type FrameVerdict =
  /** Read on. */
  | 'continue'
  /** Cut this connection (an error frame, an undecodable dictionary): the end is judged next. */
  | 'end'
  /** The run was stopped while the frame was handed on. */
  | 'abort'

/** One connection's frames, in order; `close` runs as the connection ends. */
export interface WireConnection<T> {
  frame(frame: T): Promise<FrameVerdict>
  close?(): Promise<void>
}

export interface Wire<T> {
  /** The next connection's URL, from the cursor, once what it needs is settled. */
  url(signal: AbortSignal): Promise<string>
  /** Runs as each message arrives (WsSessionOptions.accept): null drops it. */
  accept(data: Buffer, binary: boolean): T | null
  /** A connection opened at `url` starts: its frame handler. */
  open(url: string, sink: Sink, signal: AbortSignal): WireConnection<T>
  /** What the connection's end means: reconnect after the backoff, at once, or stop. */
  end(end: SessionEnd): NextStep
}

/** How each connection is opened and watched (WsSession). */
interface SocketOptions {
  /** Limit for the TCP connect plus the websocket upgrade. */
  connectTimeoutMs?: number
  /** Ping period: a connection that answers neither a ping nor with data by the next is cut. */
  heartbeatMs: number
  /** No message for this long on an open socket, however it answers pings: cut ('idle'). */
  idleTimeoutMs?: number
  /** Frames read but not yet handed on before reading pauses (resumes at half; default 1). */
  readAhead?: number
}

export interface WireRunOptions extends SocketOptions {
  /** The `source` metric label. */
  source: string
  metrics: Metrics
  backoff: BackoffOptions
  /** The socket opened: the source logs where it connected, and from which cursor. */
  onOpen: (url: string) => void
  /** Logs a reconnect's wait: what ended the connection, and the backoff. */
  onRetry: (wait: { attempt: number; delayMs: number; end: SessionEnd }) => void
}

/** `base` with these query parameters replaced: a list repeats the name, null leaves it out. */
export function withQuery(base: string, params: Record<string, string[] | number | null>): string {
  const u = new URL(base)
  for (const [name, v] of Object.entries(params)) {
    u.searchParams.delete(name)
    for (const x of v === null ? [] : [v].flat()) u.searchParams.append(name, String(x))
  }
  return u.toString()
}

/** Connections one after another until `signal` aborts or an end means stop. */
export async function runWire<T>(
  wire: Wire<T>,
  sink: Sink,
  signal: AbortSignal,
  o: WireRunOptions,
): Promise<void> {
  let attempt = 0
  for (let connects = 0; !signal.aborted; connects++) {
    if (connects > 0) o.metrics.sourceReconnectsTotal.inc({ source: o.source })
    const end = await connectOnce(wire, sink, signal, o)
    if (signal.aborted) return
    const next = wire.end(end)
    if (next === 'stop') return
    if (next === 'now') continue
    // A session that delivered data was healthy: start the backoff over.
    attempt = end.received > 0 ? 1 : attempt + 1
    const delayMs = backoffMs(attempt - 1, o.backoff)
    o.onRetry({ attempt, delayMs, end })
    await sleepUnlessAborted(delayMs, signal)
  }
}

/** One connection from the wire's URL, each frame handled in turn, until it ends. */
async function connectOnce<T>(
  wire: Wire<T>,
  sink: Sink,
  signal: AbortSignal,
  o: WireRunOptions,
): Promise<SessionEnd> {
  const url = await wire.url(signal)
  // A stop while the URL was settled (a dictionary fetch) came before the session listened
  // for it: unchecked, the session would run until a timeout with nothing to stop it.
  if (signal.aborted) return { kind: 'stopped', reason: 'aborted', received: 0 }
  const conn = wire.open(url, sink, signal)
  const accept = (data: Buffer, binary: boolean) => wire.accept(data, binary)
  const ws = new WsSession({ ...o, url, signal, accept, onOpen: () => o.onOpen(url) })
  try {
    for await (const frame of ws.frames()) {
      const verdict = await conn.frame(frame)
      if (verdict === 'continue') continue
      ws.stop(verdict === 'end' ? 'error frame' : 'aborted')
      break
    }
  } finally {
    await conn.close?.()
  }
  return ws.ended
}

// Far above any record (relays cap commits at a few MB); bounds memory per message without
// ever refusing a real event, which would otherwise be re-sent forever after each reconnect.
const MAX_PAYLOAD_BYTES = 16 << 20
const MAX_ERROR_BODY = 64 * 1024

export type SessionEnd =
  /** The upgrade was refused: its status and XRPC error body. */
  | { kind: 'refused'; status: number; error: string; message: string; reason: string; received: 0 }
  | { kind: 'closed'; code: number | null; reason: string; received: number }
  /** Cut by us: aborted, 'heartbeat timeout', 'idle', or what the consumer named. */
  | { kind: 'stopped'; reason: string; received: number }

export interface WsSessionOptions<T> extends SocketOptions {
  url: string
  signal: AbortSignal
  /** Runs as each message arrives: what the iterator yields for it, or null to drop it. */
  accept: (data: Buffer, binary: boolean) => T | null
  onOpen?: () => void
}

export class WsSession<T> {
  /** Settles once the socket closed (or the upgrade was refused). */
  readonly ended: Promise<SessionEnd>
  readonly #o: WsSessionOptions<T>
  readonly #ws: WebSocket
  readonly #heartbeat: NodeJS.Timeout
  readonly #queue: T[] = []
  readonly #readAhead: number
  #settle: (end: SessionEnd) => void = () => {}
  #wake: (() => void) | null = null
  #received = 0
  #busy = false
  #paused = false
  #closed = false
  #alive = true
  #lastMessage = performance.now()
  #stopped: string | null = null
  #error: string | null = null

  constructor(o: WsSessionOptions<T>) {
    this.#o = o
    this.#readAhead = Math.max(1, o.readAhead ?? 1)
    this.ended = new Promise((resolve) => {
      this.#settle = resolve
    })
    this.#ws = new WebSocket(o.url, {
      handshakeTimeout: o.connectTimeoutMs,
      maxPayload: MAX_PAYLOAD_BYTES,
      perMessageDeflate: false,
    })
    o.signal.addEventListener('abort', this.#onAbort, { once: true })
    this.#heartbeat = setInterval(
      () => this.#beat(),
      Math.min(o.heartbeatMs, o.idleTimeoutMs ?? Number.POSITIVE_INFINITY),
    )
    this.#listen()
  }

  /** The accepted messages in order until the socket closed; leaving early cuts it. */
  async *frames(): AsyncGenerator<T> {
    try {
      while (!this.#o.signal.aborted) {
        const next = this.#queue.shift()
        if (next === undefined) {
          if (this.#closed) return
          this.#flow()
          await new Promise<void>((r) => {
            this.#wake = r
          })
          continue
        }
        this.#busy = true
        this.#flow()
        yield next
        this.#busy = false
        // A consumer that held a frame for long made the silence itself.
        this.#lastMessage = performance.now()
      }
    } finally {
      this.#busy = false
      this.stop('consumer stopped')
    }
  }

  /** Ends the session with this reason (the first reason given stands). */
  stop(reason: string): void {
    if (this.#closed) return
    this.#stopped ??= reason
    this.#ws.terminate()
  }

  #listen(): void {
    const ws = this.#ws
    ws.on('unexpected-response', (req, res: IncomingMessage) => {
      void readBody(res).then((body) => {
        const { error, message } = xrpcError(body)
        const status = res.statusCode ?? 0
        req.destroy()
        const reason = `refused (${status} ${error})`
        this.#finish({ kind: 'refused', status, error, message, reason, received: 0 })
      })
    })
    ws.on('open', () => this.#o.onOpen?.())
    const heard = () => {
      this.#alive = true
    }
    ws.on('pong', heard)
    ws.on('ping', heard)
    ws.on('message', (data, binary) => {
      heard()
      this.#lastMessage = performance.now()
      // The default binaryType: every message is one Buffer.
      const item = this.#o.accept(data as Buffer, binary)
      if (item === null) return
      this.#received++
      this.#queue.push(item)
      this.#flow()
      this.#notify()
    })
    ws.on('error', (err) => {
      this.#error ??= err.message
    })
    ws.on('close', (code, why) => {
      const reason = this.#error ?? (why.toString() || `closed by server (${code})`)
      this.#finish(
        this.#stopped !== null
          ? { kind: 'stopped', reason: this.#stopped, received: this.#received }
          : { kind: 'closed', code, reason, received: this.#received },
      )
    })
  }

  /** Pauses reading while `readAhead` frames are held; resumes once half are done. */
  #flow(): void {
    if (this.#closed) return
    const held = this.#queue.length + (this.#busy ? 1 : 0)
    if (!this.#paused && held >= this.#readAhead) {
      this.#paused = true
      this.#ws.pause()
    } else if (this.#paused && held <= Math.floor(this.#readAhead / 2)) {
      this.#paused = false
      this.#ws.resume()
    }
  }

  // A paused socket cannot answer pings, and a slow sink is not a dead upstream; a socket
  // that answers pings but sends nothing for idleTimeoutMs has stalled all the same.
  #beat(): void {
    const now = performance.now()
    if (this.#ws.readyState !== WebSocket.OPEN || this.#paused) {
      this.#alive = true
      this.#lastMessage = now
    } else if (
      this.#o.idleTimeoutMs !== undefined &&
      now - this.#lastMessage > this.#o.idleTimeoutMs
    ) {
      this.stop('idle')
    } else if (!this.#alive) {
      this.stop('heartbeat timeout')
    } else {
      this.#alive = false
      this.#ws.ping()
    }
  }

  readonly #onAbort = (): void => {
    this.stop('aborted')
    this.#notify()
  }

  #finish(end: SessionEnd): void {
    if (this.#closed) return
    this.#closed = true
    clearInterval(this.#heartbeat)
    this.#o.signal.removeEventListener('abort', this.#onAbort)
    this.#settle(end)
    this.#notify()
  }

  #notify(): void {
    this.#wake?.()
    this.#wake = null
  }
}

async function readBody(res: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  try {
    for await (const chunk of res) {
      size += (chunk as Buffer).length
      if (size > MAX_ERROR_BODY) break
      chunks.push(chunk as Buffer)
    }
  } catch {
    // A body cut short still names the status; the caller logs what it got.
  }
  return Buffer.concat(chunks).toString('utf8')
}

/** `{"error","message"}` of an XRPC error body; anything else is `unknown` with the text. */
function xrpcError(body: string): { error: string; message: string } {
  try {
    const v = JSON.parse(body) as { error?: unknown; message?: unknown }
    return {
      error: typeof v.error === 'string' ? v.error : 'unknown',
      message: typeof v.message === 'string' ? v.message : '',
    }
  } catch {
    return { error: 'unknown', message: body.slice(0, 200) }
  }
}
