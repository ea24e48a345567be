import type { IncomingMessage } from 'node:http'
import { WebSocket } from 'ws'

// One websocket connection to Jetstream v2: a refused upgrade comes back with its XRPC error
// body (which `ws` only shows through 'unexpected-response'), messages are handed over one at
// a time with the socket paused meanwhile (backpressure), and a dead or silent upstream is cut.

export type SessionEnd =
  | { kind: 'refused'; status: number; error: string; message: string; received: 0 }
  | { kind: 'closed'; code: number | null; reason: string; received: number }
  | { kind: 'stopped'; reason: string; received: number }

/** What a message asks of the session: go on, end it (an error frame), or stop (aborted). */
export type Verdict = 'continue' | 'end' | 'abort'

export interface SessionOptions {
  connectTimeoutMs: number
  heartbeatMs: number
  /** No message for this long on an open socket: cut it (the upstream stalled). */
  idleTimeoutMs: number
  maxPayloadBytes: number
  onOpen?: () => void
}

const MAX_ERROR_BODY = 64 * 1024

export function runSession(
  url: string,
  opts: SessionOptions,
  onMessage: (data: Buffer, binary: boolean) => Promise<Verdict>,
  signal: AbortSignal,
): Promise<SessionEnd> {
  return new Promise<SessionEnd>((resolve, reject) => {
    new Session(url, opts, onMessage, signal, resolve, reject)
  })
}

class Session {
  readonly #ws: WebSocket
  readonly #opts: SessionOptions
  readonly #onMessage: (data: Buffer, binary: boolean) => Promise<Verdict>
  readonly #signal: AbortSignal
  readonly #resolve: (end: SessionEnd) => void
  readonly #reject: (err: unknown) => void
  readonly #queue: Array<{ data: Buffer; binary: boolean }> = []
  readonly #heartbeat: NodeJS.Timeout
  readonly #onAbort = () => this.#stop('aborted')
  #received = 0
  #draining = false
  #closed = false
  #settled = false
  #alive = true
  #lastMessageAt = Date.now()
  #end: SessionEnd | null = null
  #failure: unknown = null
  #code: number | null = null
  #reason = ''

  constructor(
    url: string,
    opts: SessionOptions,
    onMessage: (data: Buffer, binary: boolean) => Promise<Verdict>,
    signal: AbortSignal,
    resolve: (end: SessionEnd) => void,
    reject: (err: unknown) => void,
  ) {
    this.#opts = opts
    this.#onMessage = onMessage
    this.#signal = signal
    this.#resolve = resolve
    this.#reject = reject
    this.#ws = new WebSocket(url, {
      handshakeTimeout: opts.connectTimeoutMs,
      maxPayload: opts.maxPayloadBytes,
      perMessageDeflate: false,
    })
    signal.addEventListener('abort', this.#onAbort, { once: true })
    this.#heartbeat = setInterval(
      () => this.#beat(),
      Math.min(opts.heartbeatMs, opts.idleTimeoutMs),
    )
    this.#listen()
  }

  #listen(): void {
    const ws = this.#ws
    ws.on('unexpected-response', (req, res: IncomingMessage) => {
      readBody(res).then((body) => {
        const { error, message } = xrpcError(body)
        this.#closed = true
        req.destroy()
        this.#settle({ kind: 'refused', status: res.statusCode ?? 0, error, message, received: 0 })
      })
    })
    ws.on('open', () => this.#opts.onOpen?.())
    ws.on('pong', () => {
      this.#alive = true
    })
    ws.on('ping', () => {
      this.#alive = true
    })
    ws.on('message', (data, binary) => {
      this.#alive = true
      this.#lastMessageAt = Date.now()
      this.#queue.push({ data: toBuffer(data), binary })
      if (!this.#draining) void this.#drain()
    })
    ws.on('error', (err) => {
      this.#reason ||= err.message
    })
    ws.on('close', (c, why) => {
      this.#closed = true
      this.#code = c
      this.#reason ||= why.toString() || `closed by server (${c})`
      this.#maybeFinish()
    })
  }

  /** Pausing stops socket reads, so TCP pushes back on the server while the sink is full. */
  async #drain(): Promise<void> {
    this.#draining = true
    this.#ws.pause()
    try {
      while (this.#queue.length > 0 && !this.#signal.aborted && this.#end === null) {
        const m = this.#queue.shift()!
        const verdict = await this.#onMessage(m.data, m.binary)
        this.#received++
        if (verdict === 'abort') this.#stop('aborted')
        else if (verdict === 'end') this.#stop('error frame')
      }
    } catch (err) {
      this.#failure = err
      this.#stop('sink failed')
    }
    this.#queue.length = 0
    this.#draining = false
    if (!this.#closed) this.#ws.resume()
    this.#lastMessageAt = Date.now()
    this.#maybeFinish()
  }

  // A paused socket cannot answer pings, and a slow sink is not a dead upstream; a socket
  // that answers pings but sends nothing for idleTimeoutMs has stalled all the same.
  #beat(): void {
    if (this.#ws.readyState !== WebSocket.OPEN || this.#draining) {
      this.#alive = true
    } else if (Date.now() - this.#lastMessageAt > this.#opts.idleTimeoutMs) {
      this.#stop('idle')
    } else if (!this.#alive) {
      this.#stop('heartbeat timeout')
    } else {
      this.#alive = false
      this.#ws.ping()
    }
  }

  #stop(reason: string): void {
    this.#end ??= { kind: 'stopped', reason, received: this.#received }
    this.#ws.terminate()
  }

  /** Queued messages are handled before the session ends, so a reconnect never races them. */
  #maybeFinish(): void {
    if (!this.#closed || this.#draining) return
    const code = this.#code
    const reason = this.#reason || `closed (${code})`
    this.#settle(this.#end ?? { kind: 'closed', code, reason, received: this.#received })
  }

  #settle(value: SessionEnd): void {
    if (this.#settled) return
    this.#settled = true
    clearInterval(this.#heartbeat)
    this.#signal.removeEventListener('abort', this.#onAbort)
    if (this.#failure !== null) this.#reject(this.#failure)
    else this.#resolve(value)
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
export function xrpcError(body: string): { error: string; message: string } {
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
