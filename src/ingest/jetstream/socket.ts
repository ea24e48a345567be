import type { Logger } from 'pino'
import { type RawData, WebSocket } from 'ws'
import type { SourceCursor } from '../../model/cursor.ts'

// One Jetstream v1 connection as a small state machine: messages queue while one is being
// handled, the socket pauses while the queue drains (so TCP pushes back on the server), and
// the session ends only once the socket closed AND the queue is drained, so a reconnect
// never races messages of the previous connection.

// Far above any record (relays cap commits at a few MB); bounds memory per message without
// ever refusing a real event, which would otherwise be re-sent forever after each reconnect.
const MAX_PAYLOAD_BYTES = 16 << 20

export interface SessionEnd {
  /** Messages handled: a session that delivered data was healthy. */
  received: number
  reason: string
}

export interface SocketSessionOptions {
  url: string
  /** For the log line on open. */
  cursor: SourceCursor | null
  connectTimeoutMs: number
  /** A connection that answers neither pings nor with data in one period is cut. */
  heartbeatMs: number
  logger: Logger
  signal: AbortSignal
  /** Handles one message; resolves false to stop reading (aborted). */
  onMessage: (text: string) => Promise<boolean>
}

/** Runs one connection to its end; rejects when `onMessage` throws (the sink failed). */
export function runSocketSession(opts: SocketSessionOptions): Promise<SessionEnd> {
  return new Promise<SessionEnd>((resolve, reject) => {
    new SocketSession(opts, (end, failure) => (failure === null ? resolve(end) : reject(failure)))
  })
}

class SocketSession {
  readonly #opts: SocketSessionOptions
  readonly #ws: WebSocket
  readonly #heartbeat: NodeJS.Timeout
  readonly #done: (end: SessionEnd, failure: unknown) => void
  readonly #queue: RawData[] = []
  #received = 0
  #draining = false
  #closed = false
  #alive = true
  #reason = 'closed'
  #failure: unknown = null

  constructor(opts: SocketSessionOptions, done: (end: SessionEnd, failure: unknown) => void) {
    this.#opts = opts
    this.#done = done
    this.#ws = new WebSocket(opts.url, {
      handshakeTimeout: opts.connectTimeoutMs,
      maxPayload: MAX_PAYLOAD_BYTES,
      perMessageDeflate: false,
    })
    opts.signal.addEventListener('abort', this.#onAbort, { once: true })
    this.#heartbeat = setInterval(() => this.#beat(), opts.heartbeatMs)
    this.#listen()
  }

  #listen(): void {
    const ws = this.#ws
    const { url, cursor, logger } = this.#opts
    ws.on('open', () => logger.info({ url, cursor }, 'connected to Jetstream'))
    ws.on('pong', () => {
      this.#alive = true
    })
    ws.on('message', (data) => {
      this.#alive = true
      this.#queue.push(data)
      if (!this.#draining) void this.#drain()
    })
    ws.on('error', (err) => {
      this.#reason = err.message
    })
    ws.on('close', (code) => {
      this.#closed = true
      if (this.#reason === 'closed') this.#reason = `closed by server (${code})`
      this.#maybeFinish()
    })
  }

  readonly #onAbort = (): void => {
    this.#reason = 'aborted'
    this.#ws.terminate()
  }

  #beat(): void {
    // The handshake has its own timeout; a paused socket cannot answer pings, and a slow
    // sink is not a dead upstream.
    if (this.#ws.readyState !== WebSocket.OPEN || this.#draining) {
      this.#alive = true
    } else if (!this.#alive) {
      this.#reason = 'heartbeat timeout'
      this.#ws.terminate()
    } else {
      this.#alive = false
      this.#ws.ping()
    }
  }

  async #drain(): Promise<void> {
    this.#draining = true
    // Pausing stops socket reads, so TCP pushes back on the server while the sink is full.
    this.#ws.pause()
    try {
      await this.#handleQueued()
    } catch (err) {
      this.#failure = err
      this.#reason = 'sink failed'
      this.#ws.terminate()
    }
    this.#queue.length = 0
    this.#draining = false
    if (!this.#closed) this.#ws.resume()
    this.#maybeFinish()
  }

  async #handleQueued(): Promise<void> {
    const { signal, onMessage } = this.#opts
    while (this.#queue.length > 0 && !signal.aborted) {
      const text = this.#queue.shift()!.toString()
      if (!(await onMessage(text))) return
      this.#received++
    }
  }

  // Queued messages are drained before the session ends, so a reconnect never races them.
  #maybeFinish(): void {
    if (!this.#closed || this.#draining) return
    clearInterval(this.#heartbeat)
    this.#opts.signal.removeEventListener('abort', this.#onAbort)
    this.#done({ received: this.#received, reason: this.#reason }, this.#failure)
  }
}
