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
    const ws = new WebSocket(url, {
      handshakeTimeout: opts.connectTimeoutMs,
      maxPayload: opts.maxPayloadBytes,
      perMessageDeflate: false,
    })
    const queue: Array<{ data: Buffer; binary: boolean }> = []
    let received = 0
    let draining = false
    let closed = false
    let settled = false
    let alive = true
    let lastMessageAt = Date.now()
    let end: SessionEnd | null = null
    let failure: unknown = null
    let code: number | null = null
    let reason = ''

    const settle = (value: SessionEnd) => {
      if (settled) return
      settled = true
      clearInterval(heartbeat)
      signal.removeEventListener('abort', onAbort)
      if (failure !== null) reject(failure)
      else resolve(value)
    }
    const maybeFinish = () => {
      if (!closed || draining) return
      settle(end ?? { kind: 'closed', code, reason: reason || `closed (${code})`, received })
    }
    const stop = (value: SessionEnd) => {
      end ??= value
      ws.terminate()
    }
    const onAbort = () => stop({ kind: 'stopped', reason: 'aborted', received })
    signal.addEventListener('abort', onAbort, { once: true })

    const drain = async () => {
      draining = true
      ws.pause()
      try {
        while (queue.length > 0 && !signal.aborted && end === null) {
          const m = queue.shift()!
          const verdict = await onMessage(m.data, m.binary)
          received++
          if (verdict === 'abort') stop({ kind: 'stopped', reason: 'aborted', received })
          else if (verdict === 'end') stop({ kind: 'stopped', reason: 'error frame', received })
        }
      } catch (err) {
        failure = err
        stop({ kind: 'stopped', reason: 'sink failed', received })
      }
      queue.length = 0
      draining = false
      if (!closed) ws.resume()
      lastMessageAt = Date.now()
      maybeFinish()
    }

    const heartbeat = setInterval(
      () => {
        if (ws.readyState !== WebSocket.OPEN || draining) {
          alive = true
        } else if (Date.now() - lastMessageAt > opts.idleTimeoutMs) {
          stop({ kind: 'stopped', reason: 'idle', received })
        } else if (!alive) {
          stop({ kind: 'stopped', reason: 'heartbeat timeout', received })
        } else {
          alive = false
          ws.ping()
        }
      },
      Math.min(opts.heartbeatMs, opts.idleTimeoutMs),
    )

    ws.on('unexpected-response', (req, res: IncomingMessage) => {
      readBody(res).then((body) => {
        const { error, message } = xrpcError(body)
        closed = true
        req.destroy()
        settle({ kind: 'refused', status: res.statusCode ?? 0, error, message, received: 0 })
      })
    })
    ws.on('open', () => opts.onOpen?.())
    ws.on('pong', () => {
      alive = true
    })
    ws.on('ping', () => {
      alive = true
    })
    ws.on('message', (data, binary) => {
      alive = true
      lastMessageAt = Date.now()
      queue.push({ data: toBuffer(data), binary })
      if (!draining) void drain()
    })
    ws.on('error', (err) => {
      reason ||= err.message
    })
    ws.on('close', (c, why) => {
      closed = true
      code = c
      reason ||= why.toString() || `closed by server (${c})`
      maybeFinish()
    })
  })
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
