import type { Logger } from 'pino'
import { AppError } from '../../faults/errors.ts'
import { type SourceCursor, valueOfKind } from '../../model/cursor.ts'
import type { Sink } from '../../model/events.ts'
import type { HandleVerifier } from '../../model/handles.ts'
import type { Metrics } from '../../observe/metrics.ts'
import type { IngestGap, Source } from '../source.ts'
import { verifyWithTimeout } from '../verify-handle.ts'
import { reconnect, type SessionEnd, WsSession } from '../ws-session.ts'
import { createV2Handler, type HandlerState, SOURCE } from './v2-handler.ts'
import { SyncWindows, watchQuiet } from './v2-sync.ts'
import { fetchZstdDictionary } from './v2-zstd.ts'

// Jetstream v2 `network.bsky.jetstream.subscribeEvents` (notes/jetstream-v2.md, SPEC 5).

export const V2_NSID = 'network.bsky.jetstream.subscribeEvents'

export interface JetstreamV2Options {
  url: string
  /** `collections` asked of Jetstream: exact NSIDs or `prefix.*`. No `kinds`: we need them all. */
  wantedCollections: string[]
  collections: Iterable<string>
  logger: Logger
  metrics: Metrics
  verifyHandle?: HandleVerifier
  /** What a 400 CursorTooOld does: stop ingesting (default) or go on from the live tip. */
  onTooOld?: 'stop' | 'tip'
  /** Ask for dictionary zstd frames (default true); falls back to text when that fails. */
  zstd?: boolean
  backoffBaseMs?: number
  backoffMaxMs?: number
  connectTimeoutMs?: number
  heartbeatMs?: number
  idleTimeoutMs?: number
  verifyTimeoutMs?: number
  /** Cap on one decoded zstd frame (the Go client's read limit). */
  maxDecodedBytes?: number
  /**
   * A `#sync` window also ends once the stream is this far past its last create, or once no
   * frame has come for this long.
   */
  syncQuietSeconds?: number
  fetch?: typeof fetch
  random?: () => number
}

/** A configuration Jetstream refuses (400 InvalidRequest): retrying cannot help. */
export class JetstreamConfigError extends AppError {}

export function buildV2Url(
  base: string,
  collections: string[],
  cursor: number | null,
  dictId: number | null,
) {
  const u = new URL(base)
  for (const k of ['collections', 'cursor', 'zstdDictionary']) u.searchParams.delete(k)
  for (const c of collections) u.searchParams.append('collections', c)
  if (cursor !== null) u.searchParams.set('cursor', String(cursor))
  if (dictId !== null) u.searchParams.set('zstdDictionary', String(dictId))
  return u.toString()
}

export function createJetstreamV2Source(opts: JetstreamV2Options): Source & {
  readonly gap: IngestGap | null
  readonly lastSeq: number | null
} {
  const logger = opts.logger.child({ source: SOURCE, wire: 'v2' })
  const metrics = opts.metrics
  const fault = (reason: string) => metrics.sourceFaultsTotal.inc({ source: SOURCE, reason })
  const baseMs = opts.backoffBaseMs ?? 1000
  const maxMs = opts.backoffMaxMs ?? 60_000
  const session = {
    connectTimeoutMs: opts.connectTimeoutMs ?? 10_000,
    heartbeatMs: opts.heartbeatMs ?? 30_000,
    idleTimeoutMs: opts.idleTimeoutMs ?? 120_000,
  }
  const state: HandlerState = {
    resume: null,
    sessionSeq: null,
    track: { accepted: null, candidate: null },
    dictionary: null,
    ended: null,
  }
  let gap: IngestGap | null = null
  const reportGap = (g: IngestGap) => {
    gap = g
    metrics.resumeGapsTotal.inc({ source: SOURCE })
  }
  const quietSeconds = opts.syncQuietSeconds ?? 10
  const windows = new SyncWindows({ quietSeconds, maxOpen: 10_000 })
  const handler = createV2Handler(
    {
      logger,
      metrics,
      collections: new Set(opts.collections),
      windows,
      verify: (did, claimed) =>
        verifyWithTimeout(opts.verifyHandle, did, claimed, opts.verifyTimeoutMs ?? 10_000, logger),
      maxDecodedBytes: opts.maxDecodedBytes ?? 32 << 20,
      onOutdatedCursor: (message) => {
        fault('outdated_cursor')
        reportGap({
          reason: 'OutdatedCursor',
          at: new Date().toISOString(),
          cursor: state.resume?.value ?? null,
          message,
          action: BACKFILL,
        })
        logger.error(
          { message },
          `Jetstream clamped the cursor to its retention floor: events were missed. ${BACKFILL}`,
        )
      },
    },
    state,
  )
  let zstd: 'want' | 'off' = opts.zstd === false ? 'off' : 'want'
  let refetched = false

  async function loadDictionary(): Promise<void> {
    if (zstd === 'off' || state.dictionary) return
    try {
      state.dictionary = await fetchZstdDictionary(opts.url, { fetch: opts.fetch })
      logger.info({ dictionaryId: state.dictionary.id }, 'zstd dictionary loaded')
    } catch (err) {
      fault('zstd_dictionary_fetch')
      logger.warn({ err }, 'no zstd dictionary: falling back to text frames')
      zstd = 'off'
    }
  }

  function dictionaryRefused(end: { message: string }): void {
    fault('zstd_dictionary_unknown')
    state.dictionary = null
    if (refetched) {
      zstd = 'off'
      logger.warn(
        { message: end.message },
        'zstd dictionary refused again: falling back to text frames',
      )
    } else {
      refetched = true
      logger.info(
        { message: end.message },
        'zstd dictionary retired upstream: fetching the current one',
      )
    }
  }

  /** What a refused upgrade means: 'retry' with backoff, 'now' without, or 'stop'. */
  function onRefused(end: Extract<SessionEnd, { kind: 'refused' }>): 'retry' | 'now' | 'stop' {
    if (end.status === 400 && end.error === 'CursorTooOld') return cursorTooOld(end.message)
    if (end.status === 400 && end.error === 'UnknownZstdDictionary') {
      dictionaryRefused(end)
      return 'now'
    }
    if (end.status === 400 && end.error === 'InvalidRequest')
      throw new JetstreamConfigError(`Jetstream refused the subscription: ${end.message}`)
    fault(refusalFault(end.status))
    logger.warn(
      { status: end.status, error: end.error, message: end.message },
      'Jetstream refused the connection',
    )
    return 'retry'
  }

  /** The stored cursor is older than Jetstream keeps: stop, or go on from the tip. */
  function cursorTooOld(message: string): 'now' | 'stop' {
    fault('cursor_too_old')
    const tip = opts.onTooOld === 'tip'
    reportGap({
      reason: 'CursorTooOld',
      at: new Date().toISOString(),
      cursor: state.resume?.value ?? null,
      message,
      action: BACKFILL,
    })
    logger.error(
      { cursor: state.resume, message, onTooOld: tip ? 'tip' : 'stop' },
      `Jetstream no longer holds events after the stored cursor (CursorTooOld). ${BACKFILL} ` +
        (tip ? TOO_OLD_TIP : TOO_OLD_STOP),
    )
    if (!tip) return 'stop'
    state.resume = null
    state.track = { accepted: null, candidate: null }
    return 'now'
  }

  function onEnd(end: Exclude<SessionEnd, { kind: 'refused' }>): 'retry' | 'now' {
    if (end.kind === 'closed') fault(end.code === 1001 ? 'going_away' : 'abrupt_close')
    else if (end.reason === 'idle' || end.reason === 'heartbeat timeout')
      fault(end.reason === 'idle' ? 'idle' : 'heartbeat')
    const ended = state.ended
    state.ended = null
    if (ended?.error === 'UnknownZstdDictionary') {
      dictionaryRefused(ended)
      return 'now'
    }
    // A healthy session starts the dictionary refetch over (and the backoff: ws-session.ts).
    if (end.received > 0) refetched = false
    return 'retry'
  }

  async function run(
    sink: Sink,
    startCursor: SourceCursor | null,
    signal: AbortSignal,
  ): Promise<void> {
    state.resume = startCursor
    // A time_us start is no seq to continue from: the first seq the server sends is taken.
    state.track = { accepted: valueOfKind(startCursor, 'seq'), candidate: null }
    let end: SessionEnd | null = null
    await reconnect({
      signal,
      backoff: { baseMs, maxMs, jitter: 'full', random: opts.random },
      onReconnect: () => metrics.sourceReconnectsTotal.inc({ source: SOURCE }),
      session: async () => {
        end = await connect(sink, signal)
        if (signal.aborted) return { next: 'stop', received: end.received }
        const next = end.kind === 'refused' ? onRefused(end) : onEnd(end)
        return { next, received: end.received }
      },
      onRetry: ({ attempt, delayMs }) =>
        logger.warn(
          { end, attempt, delayMs, cursor: state.resume },
          'Jetstream connection lost; reconnecting',
        ),
    })
  }

  /** One session from the last seq, with the current dictionary when zstd is on. */
  async function connect(sink: Sink, signal: AbortSignal): Promise<SessionEnd> {
    await loadDictionary()
    // A stop during the dictionary fetch fired before the session listened for it: unchecked,
    // the session would run until the idle timeout (120 s) with nothing to stop it.
    if (signal.aborted) return { kind: 'stopped', reason: 'aborted', received: 0 }
    const url = buildV2Url(
      opts.url,
      opts.wantedCollections,
      state.resume?.value ?? null,
      state.dictionary?.id ?? null,
    )
    state.sessionSeq = null
    const quiet = watchQuiet({
      handle: (d, b) => handler.handle(d, b, sink, signal),
      closeQuiet: () => handler.closeQuiet(sink, signal),
      windows,
      quietMs: quietSeconds * 1000,
    })
    const ws = new WsSession({
      ...session,
      url,
      signal,
      accept: (data, binary) => ({ data, binary }),
      onOpen: () => logger.info({ url, cursor: state.resume }, 'connected to Jetstream v2'),
    })
    try {
      for await (const m of ws.frames()) {
        const verdict = await quiet.onMessage(m.data, m.binary)
        if (verdict === 'continue') continue
        ws.stop(verdict === 'end' ? 'error frame' : 'aborted')
        break
      }
    } finally {
      await quiet.stop()
    }
    return ws.ended
  }

  return {
    name: SOURCE,
    key: opts.url,
    provenance: 'jetstream',
    // Writes seqs; also starts from a time_us, which the server translates (SPEC 5).
    resumesFrom: ['seq', 'time_us'],
    run,
    get gap() {
      return gap
    },
    get lastSeq() {
      return valueOfKind(state.resume, 'seq')
    },
  }
}

const TOO_OLD_TIP = 'Continuing from the live tip (JETSTREAM_ON_TOO_OLD=tip).'
const TOO_OLD_STOP =
  'Ingestion stopped (JETSTREAM_ON_TOO_OLD=stop); set JETSTREAM_ON_TOO_OLD=tip to continue from the live tip.'

const refusalFault = (status: number): string =>
  status === 503 ? 'unavailable' : status === 400 ? 'refused_unknown' : 'refused'

const BACKFILL =
  'Recover the missing records with `prompt-appview backfill` (it re-fetches every repo of the collections).'
