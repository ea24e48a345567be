import type { Logger } from 'pino'
import { AppError } from '../../faults/errors.ts'
import { type SourceCursor, valueOfKind } from '../../model/cursor.ts'
import type { Sink } from '../../model/events.ts'
import type { HandleVerifier } from '../../model/handles.ts'
import type { Metrics } from '../../observe/metrics.ts'
import { createRefusalReporter } from '../cursor-refusals.ts'
import type { IngestGap, Source } from '../source.ts'
import { verifyWithTimeout } from '../verify-handle.ts'
import type { NextStep, SessionEnd } from '../ws-session.ts'
import { runWire, type Wire } from '../ws-source.ts'
import { type JetstreamConnectionOptions, jetstreamConnection } from './connection.ts'
import { V2Cursor } from './v2-cursor.ts'
import { V2Decoder } from './v2-decoder.ts'
import { SOURCE, type V2End, V2Frames } from './v2-handler.ts'
import { SyncWindows, watchQuiet } from './v2-sync.ts'

// Jetstream v2 `network.bsky.jetstream.subscribeEvents` (notes/jetstream-v2.md, SPEC 5).

export const V2_NSID = 'network.bsky.jetstream.subscribeEvents'

export interface JetstreamV2Options extends JetstreamConnectionOptions {
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
  const wire = new JetstreamV2Wire(opts, logger)
  return {
    name: SOURCE,
    key: opts.url,
    provenance: 'jetstream',
    // Writes seqs; also starts from a time_us, which the server translates (SPEC 5).
    resumesFrom: ['seq', 'time_us'],
    run: (sink: Sink, startCursor: SourceCursor | null, signal: AbortSignal) => {
      wire.cursor.start(startCursor)
      return runWire(wire, sink, signal, {
        source: SOURCE,
        metrics: opts.metrics,
        ...jetstreamConnection(opts),
        idleTimeoutMs: opts.idleTimeoutMs ?? 120_000,
        onOpen: (url) =>
          logger.info({ url, cursor: wire.cursor.resume }, 'connected to Jetstream v2'),
        onRetry: ({ attempt, delayMs, end }) =>
          logger.warn(
            { end, attempt, delayMs, cursor: wire.cursor.resume },
            'Jetstream connection lost; reconnecting',
          ),
      })
    },
    get gap() {
      return wire.gap
    },
    get lastSeq() {
      return valueOfKind(wire.cursor.resume, 'seq')
    },
  }
}

/** The v2 wire: the URL from the seq cursor and dictionary, its frames, what an end means. */
class JetstreamV2Wire implements Wire<{ data: Buffer; binary: boolean }> {
  readonly cursor: V2Cursor
  /** The newest gap this source left (a refused or clamped cursor). */
  gap: IngestGap | null = null
  readonly #opts: JetstreamV2Options
  readonly #logger: Logger
  readonly #decoder: V2Decoder
  readonly #windows: SyncWindows
  readonly #frames: V2Frames
  readonly #quietMs: number
  /** What the current connection's error frame or unknown dictionary said. */
  #ended: V2End | null = null

  constructor(opts: JetstreamV2Options, logger: Logger) {
    this.#opts = opts
    this.#logger = logger
    const { metrics } = opts
    const fault = (reason: string) => this.#fault(reason)
    const refused = createRefusalReporter({ source: SOURCE, logger, metrics })
    this.cursor = new V2Cursor({ refused, fault, logger })
    this.#decoder = new V2Decoder({
      url: opts.url,
      zstd: opts.zstd !== false,
      maxDecodedBytes: opts.maxDecodedBytes ?? 32 << 20,
      logger,
      metrics,
      fault,
      fetch: opts.fetch,
    })
    const quietSeconds = opts.syncQuietSeconds ?? 10
    this.#quietMs = quietSeconds * 1000
    this.#windows = new SyncWindows({ quietSeconds, maxOpen: 10_000 })
    this.#frames = new V2Frames({
      logger,
      metrics,
      collections: new Set(opts.collections),
      windows: this.#windows,
      cursor: this.cursor,
      decoder: this.#decoder,
      verify: (did, claimed) =>
        verifyWithTimeout(opts.verifyHandle, did, claimed, opts.verifyTimeoutMs ?? 10_000, logger),
      onOutdatedCursor: (message) => this.#outdatedCursor(message),
    })
  }

  /** From the last seq, with the current dictionary when zstd is on. */
  async url(): Promise<string> {
    await this.#decoder.load()
    const { url, wantedCollections } = this.#opts
    const resume = this.cursor.resume?.value ?? null
    return buildV2Url(url, wantedCollections, resume, this.#decoder.dictionaryId)
  }

  accept(data: Buffer, binary: boolean) {
    return { data, binary }
  }

  /** One connection: frames in turn with the quiet rule of `#sync` windows (v2-sync.ts). */
  open(_url: string, sink: Sink, signal: AbortSignal) {
    this.cursor.newSession()
    this.#ended = null
    const quiet = watchQuiet({
      handle: async (d, b) => {
        const r = await this.#frames.handle(d, b, sink, signal)
        if (typeof r === 'string') return r
        this.#ended = r.end
        return 'end'
      },
      closeQuiet: () => this.#frames.closeQuiet(sink, signal),
      windows: this.#windows,
      quietMs: this.#quietMs,
    })
    return {
      frame: (m: { data: Buffer; binary: boolean }) => quiet.onMessage(m.data, m.binary),
      close: () => quiet.stop(),
    }
  }

  /** What an end means: 'retry' with backoff, 'now' without, or 'stop'. */
  end(end: SessionEnd): NextStep {
    if (end.kind === 'refused') return this.#refused(end)
    if (end.kind === 'closed') this.#fault(end.code === 1001 ? 'going_away' : 'abrupt_close')
    else if (end.reason === 'idle' || end.reason === 'heartbeat timeout')
      this.#fault(end.reason === 'idle' ? 'idle' : 'heartbeat')
    const ended = this.#ended
    this.#ended = null
    if (ended?.error === 'UnknownZstdDictionary') {
      this.#decoder.refused(ended.message)
      return 'now'
    }
    // A healthy session starts the dictionary refetch over (and the backoff: ws-session.ts).
    if (end.received > 0) this.#decoder.healthy()
    return 'retry'
  }

  #refused(end: Extract<SessionEnd, { kind: 'refused' }>): NextStep {
    if (end.status === 400 && end.error === 'CursorTooOld') return this.#cursorTooOld(end.message)
    if (end.status === 400 && end.error === 'UnknownZstdDictionary') {
      this.#decoder.refused(end.message)
      return 'now'
    }
    if (end.status === 400 && end.error === 'InvalidRequest')
      throw new JetstreamConfigError(`Jetstream refused the subscription: ${end.message}`)
    this.#fault(refusalFault(end.status))
    this.#logger.warn(
      { status: end.status, error: end.error, message: end.message },
      'Jetstream refused the connection',
    )
    return 'retry'
  }

  /** The stored cursor is older than Jetstream keeps: stop, or go on from the tip. */
  #cursorTooOld(message: string): NextStep {
    this.#fault('cursor_too_old')
    const tip = this.#opts.onTooOld === 'tip'
    this.#reportGap('CursorTooOld', message)
    this.#logger.error(
      { cursor: this.cursor.resume, message, onTooOld: tip ? 'tip' : 'stop' },
      `Jetstream no longer holds events after the stored cursor (CursorTooOld). ${BACKFILL} ` +
        (tip ? TOO_OLD_TIP : TOO_OLD_STOP),
    )
    if (!tip) return 'stop'
    this.cursor.reset()
    return 'now'
  }

  #outdatedCursor(message: string): void {
    this.#fault('outdated_cursor')
    this.#reportGap('OutdatedCursor', message)
    this.#logger.error(
      { message },
      `Jetstream clamped the cursor to its retention floor: events were missed. ${BACKFILL}`,
    )
  }

  #reportGap(reason: string, message: string): void {
    const at = new Date().toISOString()
    this.gap = { reason, at, cursor: this.cursor.resume?.value ?? null, message, action: BACKFILL }
    this.#opts.metrics.resumeGapsTotal.inc({ source: SOURCE })
  }

  #fault(reason: string): void {
    this.#opts.metrics.sourceFaultsTotal.inc({ source: SOURCE, reason })
  }
}

const TOO_OLD_TIP = 'Continuing from the live tip (JETSTREAM_ON_TOO_OLD=tip).'
const TOO_OLD_STOP =
  'Ingestion stopped (JETSTREAM_ON_TOO_OLD=stop); set JETSTREAM_ON_TOO_OLD=tip to continue from the live tip.'

const refusalFault = (status: number): string =>
  status === 503 ? 'unavailable' : status === 400 ? 'refused_unknown' : 'refused'

const BACKFILL =
  'Recover the missing records with `prompt-appview backfill` (it re-fetches every repo of the collections).'
