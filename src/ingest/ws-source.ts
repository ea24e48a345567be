import { type BackoffOptions, backoffMs } from '../faults/backoff.ts'
import { sleepUnlessAborted } from '../faults/timers.ts'
import type { Sink } from '../model/events.ts'
import type { Metrics } from '../observe/metrics.ts'
import { type SessionEnd, WsSession } from './ws-session.ts'

// The one runner of every network source: a Wire says the next URL (from its cursor), decodes
// and hands on frames (its cursor policy) and what an end means; the runner reconnects.

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

export interface WireRunOptions {
  /** The `source` metric label. */
  source: string
  metrics: Metrics
  backoff: BackoffOptions
  connectTimeoutMs?: number
  heartbeatMs: number
  idleTimeoutMs?: number
  /** Frames read but not yet handed on before reading pauses (ws-session.ts). */
  readAhead?: number
  /** The socket opened: the source logs where it connected, and from which cursor. */
  onOpen: (url: string) => void
  /** Logs a reconnect's wait: what ended the connection, and the backoff. */
  onRetry: (wait: { attempt: number; delayMs: number; end: SessionEnd }) => void
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
  const ws = new WsSession({
    url,
    signal,
    connectTimeoutMs: o.connectTimeoutMs,
    heartbeatMs: o.heartbeatMs,
    idleTimeoutMs: o.idleTimeoutMs,
    readAhead: o.readAhead,
    accept: (data, binary) => wire.accept(data, binary),
    onOpen: () => o.onOpen(url),
  })
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
