import type { Logger } from 'pino'
import { type RawData, WebSocket } from 'ws'
import { type Config, collectionsOf } from '../config.ts'
import type { IdentityEvent } from '../indexer/events.ts'
import type { Sink, SourceItem } from '../indexer/sink.ts'
import type { Metrics } from '../metrics.ts'
import { pushUnlessAborted, sleepUnlessAborted } from './abortable.ts'
import { advanceTimeCursor } from './cursor-guard.ts'
import { createRefusalReporter } from './cursor-refusals.ts'
import { normalizeJetstreamEvent, recordSkip, SEQ_LIMIT } from './jetstream-event.ts'
import type { Source } from './source.ts'
import { type VerifyHandle, verifyWithTimeout } from './verify-handle.ts'

export type { VerifyHandle } from './verify-handle.ts'

export interface JetstreamSourceOptions {
  /** The v1 `/subscribe` URL. */
  url: string
  /** Asked of Jetstream: exact NSIDs or `prefix.*` patterns. */
  wantedCollections: string[]
  /** Collections we keep; other commits only move the cursor. */
  collections: Iterable<string>
  rewindSeconds: number
  logger: Logger
  metrics: Metrics
  /** Verifies a handle both ways; absent: identity events carry no handle. */
  verifyHandle?: VerifyHandle
  backoffBaseMs?: number
  backoffMaxMs?: number
  /** Limit for the TCP connect plus the websocket upgrade. */
  connectTimeoutMs?: number
  /** Ping period; a connection that answers neither pings nor with data in one period is cut. */
  heartbeatMs?: number
  /** Slack beyond the rewind before a late first event counts as a resume gap. */
  gapToleranceSeconds?: number
  verifyTimeoutMs?: number
  /** Jitter source, for tests. */
  random?: () => number
}

const SOURCE = 'jetstream'
// Far above any record (relays cap commits at a few MB); bounds memory per message without
// ever refusing a real event, which would otherwise be re-sent forever after each reconnect.
const MAX_PAYLOAD_BYTES = 16 << 20

/** The settings of a Config that this source reads; the caller adds logger, metrics, tuning. */
export function jetstreamOptionsFromConfig(
  config: Config,
): Pick<JetstreamSourceOptions, 'url' | 'wantedCollections' | 'collections' | 'rewindSeconds'> {
  return {
    url: config.jetstreamUrl,
    wantedCollections: config.wantedCollections
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== ''),
    collections: collectionsOf(config),
    rewindSeconds: config.jetstreamRewindSeconds,
  }
}

export function buildSubscribeUrl(base: string, wanted: string[], cursor: number | null): string {
  const u = new URL(base)
  u.searchParams.delete('wantedCollections')
  u.searchParams.delete('cursor')
  for (const w of wanted) u.searchParams.append('wantedCollections', w)
  if (cursor !== null) u.searchParams.set('cursor', String(cursor))
  return u.toString()
}

/** Capped exponential backoff with full jitter; `attempt` counts from 1. */
export function backoffDelayMs(
  attempt: number,
  baseMs: number,
  maxMs: number,
  random: () => number = Math.random,
): number {
  const cap = Math.min(maxMs, baseMs * 2 ** Math.min(Math.max(attempt - 1, 0), 30))
  return Math.floor(random() * cap)
}

const isSeq = (cursor: number) => cursor < SEQ_LIMIT
const seqOf = (cursor: number | null) => (cursor !== null && isSeq(cursor) ? cursor : null)

interface SessionEnd {
  received: number
  reason: string
}

export function createJetstreamSource(opts: JetstreamSourceOptions): Source & {
  /** The newest cursor pushed: where a reconnect resumes (minus the rewind). */
  readonly lastCursor: number | null
} {
  const collections = new Set(opts.collections)
  const logger = opts.logger.child({ source: SOURCE })
  const deps = { logger, metrics: opts.metrics }
  const refused = createRefusalReporter({ source: SOURCE, logger, metrics: opts.metrics })
  const rewindUs = Math.round(opts.rewindSeconds * 1_000_000)
  const gapUs = rewindUs + Math.round((opts.gapToleranceSeconds ?? 2) * 1_000_000)
  const baseMs = opts.backoffBaseMs ?? 1000
  const maxMs = opts.backoffMaxMs ?? 60_000
  const connectTimeoutMs = opts.connectTimeoutMs ?? 10_000
  const heartbeatMs = opts.heartbeatMs ?? 30_000
  const verifyTimeoutMs = opts.verifyTimeoutMs ?? 10_000
  let lastCursor: number | null = null

  for (const c of collections) {
    const asked = opts.wantedCollections.some((w) =>
      w.endsWith('.*') ? c.startsWith(w.slice(0, -1)) : w === c,
    )
    if (!asked) logger.warn({ collection: c }, 'collection not covered by wantedCollections')
  }

  const verify = (did: string, handle: string | null) =>
    verifyWithTimeout(opts.verifyHandle, did, handle, verifyTimeoutMs, logger)

  /** One message → at most one push. Returns false when aborted. */
  async function handle(
    text: string,
    sink: Sink,
    signal: AbortSignal,
    observe: (timeUs: number) => void,
  ): Promise<boolean> {
    const res = normalizeJetstreamEvent(text, { collections, seqCursor: true })
    if (!res.ok) recordSkip(deps, SOURCE, res)
    const rawUs = res.ok ? res.item.timeUs : res.timeUs
    // No readable envelope (DID, time_us): not an event of the stream, the cursor stays.
    if (typeof rawUs !== 'number') return true
    // A v2 server's `cursor` field (its seq) is the better resume point; a seq resume is
    // inclusive, and a seq never compares with a time_us.
    const seq = res.ok ? seqOf(res.item.cursor) : (res.cursor ?? null)
    if (seq !== null && lastCursor !== null && isSeq(lastCursor) && seq <= lastCursor) return true
    const timeCursor = lastCursor !== null && !isSeq(lastCursor) ? lastCursor : null
    const at = advanceTimeCursor(timeCursor, rawUs, Date.now() * 1000)
    if (at.refusal) refused(at.refusal, { timeUs: rawUs, cursor: lastCursor })
    else observe(rawUs)
    let event = res.ok ? res.item.event : null
    if (res.ok && event?.kind === 'identity') {
      const handle = await verify(event.did, res.unverifiedHandle)
      event = { ...event, handle } satisfies IdentityEvent
    }
    const cursor = seq ?? at.cursor
    const item: SourceItem = { event, cursor, timeUs: at.timeUs, bytes: text.length }
    if (!(await pushUnlessAborted(sink, item, signal))) return false
    lastCursor = cursor
    return true
  }

  function checkGap(requested: number | null, firstUs: number): void {
    // A seq resume has no time to compare with (and v1 clamps silently): no heuristic there.
    if (requested === null || isSeq(requested) || firstUs - requested <= gapUs) return
    opts.metrics.resumeGapsTotal.inc({ source: SOURCE })
    logger.error(
      {
        requestedCursor: requested,
        firstEventUs: firstUs,
        gapSeconds: (firstUs - requested) / 1e6,
      },
      'Jetstream resumed later than the cursor asked for (it keeps about a day): events in ' +
        'between were missed. Run `prompt-appview backfill` to recover them.',
    )
  }

  function session(url: string, requested: number | null, sink: Sink, signal: AbortSignal) {
    return new Promise<SessionEnd>((resolve, reject) => {
      const ws = new WebSocket(url, {
        handshakeTimeout: connectTimeoutMs,
        maxPayload: MAX_PAYLOAD_BYTES,
        perMessageDeflate: false,
      })
      const queue: RawData[] = []
      let received = 0
      let first = true
      let draining = false
      let closed = false
      let alive = true
      let reason = 'closed'
      let failure: unknown = null

      const finish = () => {
        clearInterval(heartbeat)
        signal.removeEventListener('abort', onAbort)
        if (failure !== null) reject(failure)
        else resolve({ received, reason })
      }
      // Queued messages are drained before the session ends, so a reconnect never races them.
      const maybeFinish = () => {
        if (closed && !draining) finish()
      }
      const onAbort = () => {
        reason = 'aborted'
        ws.terminate()
      }
      signal.addEventListener('abort', onAbort, { once: true })

      const observe = (timeUs: number) => {
        if (!first) return
        first = false
        checkGap(requested, timeUs)
      }
      const drain = async () => {
        draining = true
        // Pausing stops socket reads, so TCP pushes back on the server while the sink is full.
        ws.pause()
        try {
          while (queue.length > 0 && !signal.aborted) {
            const text = queue.shift()!.toString()
            if (!(await handle(text, sink, signal, observe))) break
            received++
          }
        } catch (err) {
          failure = err
          reason = 'sink failed'
          ws.terminate()
        }
        queue.length = 0
        draining = false
        if (!closed) ws.resume()
        maybeFinish()
      }

      const heartbeat = setInterval(() => {
        // The handshake has its own timeout; a paused socket cannot answer pings, and a slow
        // sink is not a dead upstream.
        if (ws.readyState !== WebSocket.OPEN || draining) {
          alive = true
        } else if (!alive) {
          reason = 'heartbeat timeout'
          ws.terminate()
        } else {
          alive = false
          ws.ping()
        }
      }, heartbeatMs)

      ws.on('open', () => logger.info({ url, cursor: requested }, 'connected to Jetstream'))
      ws.on('pong', () => {
        alive = true
      })
      ws.on('message', (data) => {
        alive = true
        queue.push(data)
        if (!draining) void drain()
      })
      ws.on('error', (err) => {
        reason = err.message
      })
      ws.on('close', (code) => {
        closed = true
        if (reason === 'closed') reason = `closed by server (${code})`
        maybeFinish()
      })
    })
  }

  async function run(sink: Sink, startCursor: number | null, signal: AbortSignal): Promise<void> {
    lastCursor = startCursor
    let attempt = 0
    let connects = 0
    while (!signal.aborted) {
      const requested =
        lastCursor === null
          ? null
          : isSeq(lastCursor)
            ? lastCursor
            : Math.max(0, lastCursor - rewindUs)
      if (connects++ > 0) opts.metrics.sourceReconnectsTotal.inc({ source: SOURCE })
      const end = await session(
        buildSubscribeUrl(opts.url, opts.wantedCollections, requested),
        requested,
        sink,
        signal,
      )
      if (signal.aborted) break
      // A session that delivered data was healthy: start the backoff over.
      attempt = end.received > 0 ? 1 : attempt + 1
      const delayMs = backoffDelayMs(attempt, baseMs, maxMs, opts.random)
      logger.warn(
        { reason: end.reason, attempt, delayMs, cursor: lastCursor },
        'Jetstream connection lost; reconnecting',
      )
      await sleepUnlessAborted(delayMs, signal)
    }
  }

  return {
    name: SOURCE,
    key: opts.url,
    cursorKind: 'time_us',
    run,
    get lastCursor() {
      return lastCursor
    },
  }
}
