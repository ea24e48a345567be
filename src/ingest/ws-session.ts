import type { IncomingMessage } from 'node:http'
import { WebSocket } from 'ws'

// The one WebSocket session of every network source: frames as an async iterator, reading
// paused while the consumer holds `readAhead` of them (TCP pushes back), a dead or silent
// upstream cut, and an end only once every frame read was handed over, so a reconnect never
// races frames of the previous connection.

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

export interface WsSessionOptions<T> {
  url: string
  signal: AbortSignal
  /** Limit for the TCP connect plus the websocket upgrade. */
  connectTimeoutMs?: number
  /** Ping period: a connection that answers neither a ping nor with data by the next is cut. */
  heartbeatMs: number
  /** No message for this long on an open socket, however it answers pings: cut ('idle'). */
  idleTimeoutMs?: number
  /** Frames read but not yet done with before reading pauses (resumes at half; default 1). */
  readAhead?: number
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

  /** Messages handed over so far: a session that delivered data was healthy. */
  get received(): number {
    return this.#received
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
        this.#finish({
          kind: 'refused',
          status,
          error,
          message,
          reason: `refused (${status} ${error})`,
          received: 0,
        })
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
      const item = this.#o.accept(toBuffer(data), binary)
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

function toBuffer(data: WebSocket.RawData): Buffer {
  if (Buffer.isBuffer(data)) return data
  if (Array.isArray(data)) return Buffer.concat(data)
  return Buffer.from(data)
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
