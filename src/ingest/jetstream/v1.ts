import type { Logger } from 'pino'
import { type Config, collectionsOf } from '../../config/config.ts'
import { type SourceCursor, seqCursor, timeCursor, valueOfKind } from '../../model/cursor.ts'
import type { Sink, SourceItem } from '../../model/events.ts'
import type { HandleVerifier } from '../../model/handles.ts'
import { steadyNowMs } from '../../observe/clock.ts'
import type { Metrics } from '../../observe/metrics.ts'
import { advanceTimeCursor, createRefusalReporter, type RefusalReporter } from '../cursor-guard.ts'
import { pushUnlessAborted, type Source } from '../source.ts'
import { withVerifiedHandle } from '../verify-handle.ts'
import {
  type NextStep,
  runWire,
  type Wire,
  type WireConnection,
  type WireRunOptions,
  withQuery,
} from '../ws-source.ts'
import { normalizeJetstreamEvent } from './event.ts'
import { type NormalizeResult, recordSkip } from './skip.ts'

/** How a Jetstream client connects and reconnects; both wires take the same defaults. */
export interface JetstreamConnectionOptions {
  backoffBaseMs?: number
  backoffMaxMs?: number
  /** Limit for the TCP connect plus the websocket upgrade. */
  connectTimeoutMs?: number
  /** Ping period; a connection that answers neither pings nor with data in one period is cut. */
  heartbeatMs?: number
  /** Jitter source, for tests. */
  random?: () => number
}

type Connection = 'source' | 'metrics' | 'backoff' | 'connectTimeoutMs' | 'heartbeatMs'

export function jetstreamConnection(o: JetstreamOptions): Pick<WireRunOptions, Connection> {
  return {
    source: SOURCE,
    metrics: o.metrics,
    // Full jitter: many consumers of one server must not reconnect in step.
    backoff: {
      baseMs: o.backoffBaseMs ?? 1000,
      maxMs: o.backoffMaxMs ?? 60_000,
      jitter: 'full',
      random: o.random,
    },
    connectTimeoutMs: o.connectTimeoutMs ?? 10_000,
    heartbeatMs: o.heartbeatMs ?? 30_000,
  }
}

/** What both Jetstream wires take. */
export interface JetstreamOptions extends JetstreamConnectionOptions {
  /** The v1 `/subscribe` or the v2 `subscribeEvents` URL. */
  url: string
  /** Asked of Jetstream: exact NSIDs or `prefix.*` patterns. */
  wantedCollections: string[]
  /** Collections we keep; other commits only move the cursor. */
  collections: Iterable<string>
  logger: Logger
  metrics: Metrics
  /** Verifies a handle both ways; absent: identity events carry no handle. */
  verifyHandle?: HandleVerifier
  verifyTimeoutMs?: number
}

export interface JetstreamSourceOptions extends JetstreamOptions {
  rewindSeconds: number
  /** Slack beyond the rewind before a late first event counts as a resume gap. */
  gapToleranceSeconds?: number
}

const SOURCE = 'jetstream'

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

export const buildSubscribeUrl = (base: string, wanted: string[], cursor: number | null) =>
  withQuery(base, { wantedCollections: wanted, cursor })

// A line's position is its `time_us`, or the seq a v2 server adds as `cursor` (SPEC 5): the
// better resume point, so this source resumes from either kind.

/** Where a connection resumes: a time_us minus the rewind, a seq as is (inclusive). */
function requestedCursor(last: SourceCursor | null, rewindUs: number): SourceCursor | null {
  if (last?.kind !== 'time_us') return last
  return timeCursor(Math.max(0, last.value - rewindUs))
}

/** A message's place in the stream; null when it has none, or a seq resume sent it again. */
function positionOf(
  res: NormalizeResult,
  last: SourceCursor | null,
): { rawUs: number; seq: number | null } | null {
  const rawUs = res.ok ? res.item.timeUs : res.timeUs
  // No readable envelope (DID, time_us): not an event of the stream, the cursor stays.
  if (typeof rawUs !== 'number') return null
  // A v2 server's `cursor` field (its seq): a seq resume is inclusive, so a seq at or below
  // the last one was handled already. A seq never compares with a time_us.
  const seq = res.ok ? valueOfKind(res.item.cursor, 'seq') : (res.seq ?? null)
  const lastSeq = valueOfKind(last, 'seq')
  if (seq !== null && lastSeq !== null && seq <= lastSeq) return null
  return { rawUs, seq }
}

export function createJetstreamSource(opts: JetstreamSourceOptions): Source & {
  /** The newest cursor pushed: where a reconnect resumes (minus the rewind). */
  readonly lastCursor: SourceCursor | null
} {
  const logger = opts.logger.child({ source: SOURCE })
  warnUncovered(new Set(opts.collections), opts.wantedCollections, logger)
  const wire = new JetstreamV1Wire(opts, logger)
  return {
    name: SOURCE,
    key: opts.url,
    provenance: 'jetstream',
    resumesFrom: ['time_us', 'seq'],
    run: (sink: Sink, startCursor: SourceCursor | null, signal: AbortSignal) => {
      wire.lastCursor = startCursor
      return runWire(wire, sink, signal, {
        ...jetstreamConnection(opts),
        onOpen: (url) => logger.info({ url, cursor: wire.lastCursor }, 'connected to Jetstream'),
        onRetry: ({ attempt, delayMs, end }) =>
          logger.warn(
            { reason: end.reason, attempt, delayMs, cursor: wire.lastCursor },
            'Jetstream connection lost; reconnecting',
          ),
      })
    },
    get lastCursor() {
      return wire.lastCursor
    },
  }
}

/** The v1 wire: text lines, a `time_us` (or a v2 server's seq) cursor, resumed with a rewind. */
class JetstreamV1Wire implements Wire<string> {
  /** The newest cursor pushed. */
  lastCursor: SourceCursor | null = null
  readonly #opts: JetstreamSourceOptions
  readonly #logger: Logger
  readonly #collections: Set<string>
  readonly #refused: RefusalReporter
  readonly #rewindUs: number
  readonly #gapUs: number

  constructor(opts: JetstreamSourceOptions, logger: Logger) {
    this.#opts = opts
    this.#logger = logger
    this.#collections = new Set(opts.collections)
    this.#refused = createRefusalReporter({ source: SOURCE, logger, metrics: opts.metrics })
    this.#rewindUs = Math.round(opts.rewindSeconds * 1_000_000)
    this.#gapUs = this.#rewindUs + Math.round((opts.gapToleranceSeconds ?? 2) * 1_000_000)
  }

  async url(): Promise<string> {
    const requested = requestedCursor(this.lastCursor, this.#rewindUs)
    return buildSubscribeUrl(this.#opts.url, this.#opts.wantedCollections, requested?.value ?? null)
  }

  accept(data: Buffer): string {
    return data.toString()
  }

  /** One connection: its first trusted event is checked against the cursor it asked for. */
  open(_url: string, sink: Sink, signal: AbortSignal): WireConnection<string> {
    const requested = requestedCursor(this.lastCursor, this.#rewindUs)
    let first = true
    const observe = (timeUs: number) => {
      if (!first) return
      first = false
      this.#checkGap(requested, timeUs)
    }
    return {
      frame: async (text) =>
        (await this.#handle(text, sink, signal, observe)) ? 'continue' : 'abort',
    }
  }

  end(): NextStep {
    return 'retry'
  }

  /** One message → at most one push. Returns false when aborted. */
  async #handle(
    text: string,
    sink: Sink,
    signal: AbortSignal,
    observe: (timeUs: number) => void,
  ): Promise<boolean> {
    const res = normalizeJetstreamEvent(text, { collections: this.#collections, seqCursor: true })
    if (!res.ok) recordSkip({ logger: this.#logger, metrics: this.#opts.metrics }, SOURCE, res)
    const last = this.lastCursor
    const pos = positionOf(res, last)
    if (pos === null) return true
    const at = advanceTimeCursor(valueOfKind(last, 'time_us'), pos.rawUs, steadyNowMs() * 1000)
    if (at.refusal) this.#refused(at.refusal, { timeUs: pos.rawUs, cursor: last })
    else observe(pos.rawUs)
    const event = res.ok
      ? await withVerifiedHandle(res.item.event, res.unverifiedHandle, this.#opts, this.#logger)
      : null
    const cursor =
      pos.seq !== null ? seqCursor(pos.seq) : at.cursor === null ? null : timeCursor(at.cursor)
    const item: SourceItem = { event, cursor, timeUs: at.timeUs, bytes: text.length }
    if (!(await pushUnlessAborted(sink, item, signal))) return false
    this.lastCursor = cursor
    return true
  }

  #checkGap(requested: SourceCursor | null, firstUs: number): void {
    // A seq resume has no time to compare with (and v1 clamps silently): no heuristic there.
    const fromUs = valueOfKind(requested, 'time_us')
    if (fromUs === null || firstUs - fromUs <= this.#gapUs) return
    this.#opts.metrics.resumeGapsTotal.inc({ source: SOURCE })
    this.#logger.error(
      {
        requestedCursor: fromUs,
        firstEventUs: firstUs,
        gapSeconds: (firstUs - fromUs) / 1e6,
      },
      'Jetstream resumed later than the cursor asked for (it keeps about a day): events in ' +
        'between were missed. Run `prompt-appview backfill` to recover them.',
    )
  }
}

function warnUncovered(collections: Set<string>, wanted: string[], logger: Logger): void {
  for (const c of collections) {
    const asked = wanted.some((w) => (w.endsWith('.*') ? c.startsWith(w.slice(0, -1)) : w === c))
    if (!asked) logger.warn({ collection: c }, 'collection not covered by wantedCollections')
  }
}
