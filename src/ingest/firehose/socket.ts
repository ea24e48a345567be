import type { Logger } from 'pino'
import WebSocket from 'ws'
import type { Metrics } from '../../metrics.ts'
import type { Sink, SourceItem } from '../../model/events.ts'
import { pushUnlessAborted } from '../abortable.ts'
import type { FrameProcessor, FrameResult } from './frame.ts'

// One subscribeRepos connection. Frames are processed concurrently as they arrive (DID
// lookups and signature checks overlap) but their results come out strictly in arrival
// order; reading pauses while maxInFlight results wait, and resumes at half of that.

export interface ConnectParams {
  url: string
  processFrame: FrameProcessor
  sink: Sink
  metrics: Metrics
  signal: AbortSignal
  maxInFlight: number
  idleTimeoutMs: number
  logger: Logger
  /** Checks each frame's seq and time before its items may carry the cursor and the lag. */
  guard: (result: FrameResult) => SourceItem[]
  onItem: (item: SourceItem) => void
}

type SizedResult = FrameResult & { bytes: number }

/** One connection, until it closes or `signal` aborts; every frame read is handed on. */
export async function connectOnce(
  p: ConnectParams,
): Promise<{ frames: number; errorFrame?: string }> {
  const conn = new FrameConnection(p)
  let errorFrame: string | undefined
  try {
    for await (const result of conn.results()) {
      if (result.error) {
        errorFrame = result.error.error
        p.logger.error({ error: result.error }, 'firehose error frame')
      }
      if (result.info) logInfoFrame(result.info, p.logger, p.metrics)
      if (!(await pushFrame(p, result))) break
    }
  } finally {
    conn.close()
  }
  return { frames: conn.frames, errorFrame }
}

/** Hands a frame's items to the sink in order; false once aborted. */
async function pushFrame(p: ConnectParams, result: SizedResult): Promise<boolean> {
  for (const [i, it] of p.guard(result).entries()) {
    if (p.signal.aborted) return false
    // The frame's size rides on its first item: the queue downstream is bounded by it.
    const item = i === 0 ? { ...it, bytes: result.bytes } : it
    if (!(await pushUnlessAborted(p.sink, item, p.signal))) return false
    p.onItem(item)
  }
  return true
}

class FrameConnection {
  frames = 0
  readonly #p: ConnectParams
  readonly #ws: WebSocket
  readonly #heartbeat: NodeJS.Timeout
  readonly #queue: Array<Promise<SizedResult>> = []
  #closed = false
  #paused = false
  #lastActivity = Date.now()
  #wake: (() => void) | null = null

  constructor(p: ConnectParams) {
    this.#p = p
    this.#ws = new WebSocket(p.url, { perMessageDeflate: false })
    p.signal.addEventListener('abort', this.#onAbort, { once: true })
    this.#listen()
    this.#heartbeat = setInterval(
      () => this.#beat(),
      Math.max(100, Math.floor(p.idleTimeoutMs / 3)),
    )
  }

  /** Frame results in arrival order, until the socket closed and all were read, or abort. */
  async *results(): AsyncGenerator<SizedResult> {
    while (!this.#p.signal.aborted) {
      const head = this.#queue[0]
      if (!head) {
        if (this.#closed) return
        await new Promise<void>((r) => {
          this.#wake = r
        })
        continue
      }
      const result = await head
      this.#queue.shift()
      if (this.#paused && this.#queue.length <= this.#p.maxInFlight / 2 && !this.#closed) {
        this.#ws.resume()
        this.#paused = false
      }
      yield result
    }
  }

  close(): void {
    clearInterval(this.#heartbeat)
    this.#p.signal.removeEventListener('abort', this.#onAbort)
    if (!this.#closed) this.#ws.terminate()
  }

  #listen(): void {
    const { logger, url } = this.#p
    const ws = this.#ws
    ws.on('open', () => logger.info({ url }, 'firehose connected'))
    ws.on('message', (data: Buffer, isBinary: boolean) => this.#onMessage(data, isBinary))
    ws.on('pong', () => {
      this.#lastActivity = Date.now()
    })
    ws.on('error', (err) => logger.warn({ err: err.message, url }, 'firehose connection error'))
    ws.on('close', (code, reason) => {
      this.#closed = true
      logger.info({ code, reason: reason.toString() }, 'firehose disconnected')
      this.#notify()
    })
  }

  #onMessage(data: Buffer, isBinary: boolean): void {
    this.#lastActivity = Date.now()
    if (!isBinary) return
    this.frames++
    const bytes = data.byteLength
    this.#queue.push(
      this.#p
        .processFrame(new Uint8Array(data.buffer, data.byteOffset, data.byteLength))
        .then((r) => ({ ...r, bytes }))
        .catch((err) => {
          this.#p.logger.error({ err }, 'firehose frame processing failed')
          return { items: [], seq: null, bytes }
        }),
    )
    if (this.#queue.length >= this.#p.maxInFlight && !this.#paused) {
      this.#ws.pause()
      this.#paused = true
    }
    this.#notify()
  }

  #beat(): void {
    const idleMs = Date.now() - this.#lastActivity
    // While paused the socket is not read, so silence then is our own doing.
    if (this.#paused) this.#lastActivity = Date.now()
    else if (idleMs > this.#p.idleTimeoutMs) {
      this.#p.logger.warn({ idleMs }, 'firehose connection idle, dropping it')
      this.#ws.terminate()
    } else if (this.#ws.readyState === WebSocket.OPEN) this.#ws.ping()
  }

  readonly #onAbort = (): void => {
    this.#ws.terminate()
    this.#notify()
  }

  #notify(): void {
    this.#wake?.()
    this.#wake = null
  }
}

function logInfoFrame(
  info: NonNullable<FrameResult['info']>,
  logger: Logger,
  metrics: Metrics,
): void {
  if (info.name === 'OutdatedCursor') {
    metrics.resumeGapsTotal.inc({ source: 'firehose' })
    logger.warn(
      { info },
      'firehose cursor is older than the upstream keeps: events were missed, run backfill',
    )
  } else logger.info({ info }, 'firehose info frame')
}
