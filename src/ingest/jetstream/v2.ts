import type { Logger } from 'pino'
import { AppError } from '../../faults/errors.ts'
import { type SourceCursor, seqCursor, valueOfKind } from '../../model/cursor.ts'
import type { IndexEvent, IngestGap, Sink, SourceItem } from '../../model/events.ts'
import { createRefusalReporter } from '../cursor-guard.ts'
import { pushUnlessAborted, type Source } from '../source.ts'
import { withVerifiedHandle } from '../verify-handle.ts'
import {
  type FrameVerdict,
  type NextStep,
  runWire,
  type SessionEnd,
  type Wire,
  withQuery,
} from '../ws-source.ts'
import { recordSkip } from './skip.ts'
import { type JetstreamOptions, jetstreamConnection } from './v1.ts'
import { V2Cursor } from './v2-cursor.ts'
import { parseV2Frame, type V2Frame } from './v2-frame.ts'
import { SyncWindows, watchQuiet } from './v2-sync.ts'
import { V2Decoder } from './v2-zstd.ts'

// Jetstream v2 `network.bsky.jetstream.subscribeEvents` (notes/jetstream-v2.md, SPEC 5): each
// message decoded (v2-zstd.ts), parsed (v2-frame.ts), placed by the cursor policy
// (v2-cursor.ts), with `#sync` windows (v2-sync.ts) closed and opened.

const SOURCE = 'jetstream'

/** An error frame or an unknown dictionary ended the connection: what it said. */
interface V2End {
  error: string
  message: string
}

type EventFrame = Extract<V2Frame, { type: 'item' | 'sync' }>

export const V2_NSID = 'network.bsky.jetstream.subscribeEvents'

/** `wantedCollections` is asked as `collections`; no `kinds`: we need them all. */
export interface JetstreamV2Options extends JetstreamOptions {
  /** What a 400 CursorTooOld does: stop ingesting (default) or go on from the live tip. */
  onTooOld?: 'stop' | 'tip'
  /** Ask for dictionary zstd frames (default true); falls back to text when that fails. */
  zstd?: boolean
  idleTimeoutMs?: number
  /** Cap on one decoded zstd frame (the Go client's read limit). */
  maxDecodedBytes?: number
  /** A `#sync` window also ends this far past its last create, or this long without a frame. */
  syncQuietSeconds?: number
  fetch?: typeof fetch
}

/** A configuration Jetstream refuses (400 InvalidRequest): retrying cannot help. */
export class JetstreamConfigError extends AppError {}

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
  readonly #collections: ReadonlySet<string>
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
    this.#collections = new Set(opts.collections)
  }

  /** From the last seq, with the current dictionary when zstd is on. */
  async url(): Promise<string> {
    await this.#decoder.load()
    return withQuery(this.#opts.url, {
      collections: this.#opts.wantedCollections,
      cursor: this.cursor.resume?.value ?? null,
      zstdDictionary: this.#decoder.dictionaryId,
    })
  }

  accept(data: Buffer, binary: boolean) {
    return { data, binary }
  }

  /** One connection: frames in turn with the quiet rule of `#sync` windows (v2-sync.ts). */
  open(_url: string, sink: Sink, signal: AbortSignal) {
    this.cursor.newSession()
    this.#ended = null
    const quiet = watchQuiet({
      handle: (d, b) => this.#handle(d, b, sink, signal),
      closeQuiet: () => this.#closeQuiet(sink, signal),
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
    // A healthy session starts the dictionary refetch over (and the backoff: ws-source.ts).
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

  /** One message: 'continue', 'abort' (stopped while pushing), or 'end' with `#ended` set. */
  async #handle(
    data: Buffer,
    binary: boolean,
    sink: Sink,
    signal: AbortSignal,
  ): Promise<FrameVerdict> {
    const decoded = this.#decoder.decode(data, binary)
    if ('skip' in decoded) return 'continue'
    if ('end' in decoded) return this.#end(decoded.end)
    const { text } = decoded
    const f = parseV2Frame(text, { collections: this.#collections })
    switch (f.type) {
      case 'error':
        this.#fault(errorFault(f.error))
        this.#logger.warn(
          { error: f.error, message: f.message },
          `Jetstream error frame ${f.error}: reconnecting`,
        )
        return this.#end({ error: f.error, message: f.message })
      case 'info':
        if (f.name === 'OutdatedCursor') this.#outdatedCursor(f.message)
        else this.#logger.info({ name: f.name, message: f.message }, 'Jetstream info')
        return 'continue'
      case 'skip':
        return (await this.#onSkip(f, text.length, sink, signal)) ? 'continue' : 'abort'
      default:
        return (await this.#onEvent(f, text.length, sink, signal)) ? 'continue' : 'abort'
    }
  }

  /**
   * No frame for the quiet period: every open `#sync` window ends and its prune is pushed,
   * with the cursor past the last frame handled (no window holds it back any more).
   */
  #closeQuiet(sink: Sink, signal: AbortSignal): Promise<boolean> {
    const prunes = this.#windows.closeAll()
    if (prunes.length > 0)
      this.#logger.info({ windows: prunes.length }, 'stream quiet: closing open #sync windows')
    return this.#pushPrunes(prunes, sink, signal)
  }

  #end(ended: V2End): FrameVerdict {
    this.#ended = ended
    return 'end'
  }

  /** The cursor an item carries: held back before any open window's `#sync`. */
  #cursorAt(accepted: number | null) {
    return accepted === null ? null : seqCursor(this.#windows.safeCursor(accepted))
  }

  async #pushPrunes(events: IndexEvent[], sink: Sink, signal: AbortSignal) {
    for (const event of events) {
      const item = { event, cursor: this.#cursorAt(this.cursor.accepted), timeUs: null }
      if (!(await pushUnlessAborted(sink, item, signal))) return false
    }
    return true
  }

  async #onEvent(f: EventFrame, bytes: number, sink: Sink, signal: AbortSignal) {
    const { cursor } = this
    const windows = this.#windows
    if (cursor.seen(f.seq)) return true
    const at = cursor.position(f.seq, f.type === 'sync' ? f.timeUs : (f.item.timeUs ?? 0))
    // A refused (future) time must not end every open window: the quiet rule skips it.
    const timeUs = at.timeUs ?? 0
    if (!(await this.#pushPrunes(windows.closeBefore(closingOf(f, timeUs)), sink, signal)))
      return false
    if (f.type === 'sync') {
      const { did, rev, seq } = f
      this.#logger.info({ did, rev, seq }, 'repo resynced upstream: replacing its records')
      const prunes = windows.open(did, rev, seq, timeUs)
      if (!(await this.#pushPrunes(prunes, sink, signal))) return false
    }
    const event =
      f.type === 'item'
        ? await withVerifiedHandle(f.item.event, f.unverifiedHandle, this.#opts, this.#logger)
        : null
    cursor.handled(f.seq, at.cursor)
    const item: SourceItem = { event, cursor: this.#cursorAt(at.cursor), timeUs: at.timeUs, bytes }
    return pushUnlessAborted(sink, item, signal)
  }

  async #onSkip(
    f: Extract<V2Frame, { type: 'skip' }>,
    bytes: number,
    sink: Sink,
    signal: AbortSignal,
  ) {
    if (f.unknownType) {
      this.#fault('unknown_type')
      this.#logger.warn({ seq: f.seq }, `skipped frame: ${f.skip.detail}`)
    } else {
      recordSkip({ logger: this.#logger, metrics: this.#opts.metrics }, SOURCE, f.skip, {
        seq: f.seq,
      })
    }
    // A readable seq still moves the cursor past the frame, as a filtered one would.
    const { cursor } = this
    if (f.seq === undefined || f.timeUs === undefined || cursor.seen(f.seq)) return true
    const at = cursor.position(f.seq, f.timeUs)
    cursor.handled(f.seq, at.cursor)
    const item = { event: null, cursor: this.#cursorAt(at.cursor), timeUs: at.timeUs, bytes }
    return pushUnlessAborted(sink, item, signal)
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

/** What an event frame closes windows before: its repo's position, or just its time. */
function closingOf(f: EventFrame, timeUs: number) {
  const event = f.type === 'item' ? f.item.event : null
  const did = f.type === 'sync' ? f.did : event?.did
  if (!did) return { timeUs }
  const commit = event?.kind === 'commit' ? { op: event.op, rev: event.rev } : null
  return { did, seq: f.seq, timeUs, commit }
}

function errorFault(error: string): string {
  if (error === 'ConsumerTooSlow') return 'consumer_too_slow'
  return error === 'InternalError' ? 'internal_error' : 'error_frame'
}
