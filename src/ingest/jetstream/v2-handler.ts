import type { Logger } from 'pino'
import { seqCursor } from '../../model/cursor.ts'
import type { IdentityEvent, IndexEvent, Sink, SourceItem } from '../../model/events.ts'
import type { Metrics } from '../../observe/metrics.ts'
import { pushUnlessAborted } from '../abortable.ts'
import { recordSkip } from '../record-skip.ts'
import type { V2Cursor } from './v2-cursor.ts'
import type { V2Decoder } from './v2-decoder.ts'
import { parseV2Frame, type V2Frame } from './v2-frame.ts'
import type { SyncWindows, Verdict } from './v2-sync.ts'

// One Jetstream v2 message → pushes into the sink: decoded (v2-decoder.ts), parsed, placed by
// the cursor policy (v2-cursor.ts), with `#sync` windows (v2-sync.ts) closed and opened.

export const SOURCE = 'jetstream'

/** An error frame or an unknown dictionary ended the connection: what it said. */
export interface V2End {
  error: string
  message: string
}

export interface V2FramesDeps {
  logger: Logger
  metrics: Metrics
  collections: ReadonlySet<string>
  windows: SyncWindows
  cursor: V2Cursor
  decoder: V2Decoder
  verify: (did: string, claimed: string | null) => Promise<string | null>
  /** `#info OutdatedCursor`: the server clamped a timestamp cursor (events were missed). */
  onOutdatedCursor: (message: string) => void
}

type EventFrame = Extract<V2Frame, { type: 'item' | 'sync' }>

export class V2Frames {
  readonly #d: V2FramesDeps

  constructor(deps: V2FramesDeps) {
    this.#d = deps
  }

  /** One message: 'continue', 'abort' (stopped while pushing), or the end it names. */
  async handle(
    data: Buffer,
    binary: boolean,
    sink: Sink,
    signal: AbortSignal,
  ): Promise<Exclude<Verdict, 'end'> | { end: V2End }> {
    const decoded = this.#d.decoder.decode(data, binary)
    if ('skip' in decoded) return 'continue'
    if ('end' in decoded) return decoded
    const { text } = decoded
    const f = parseV2Frame(text, { collections: this.#d.collections })
    switch (f.type) {
      case 'error':
        this.#fault(errorFault(f.error))
        this.#d.logger.warn(
          { error: f.error, message: f.message },
          `Jetstream error frame ${f.error}: reconnecting`,
        )
        return { end: { error: f.error, message: f.message } }
      case 'info':
        if (f.name === 'OutdatedCursor') this.#d.onOutdatedCursor(f.message)
        else this.#d.logger.info({ name: f.name, message: f.message }, 'Jetstream info')
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
  closeQuiet(sink: Sink, signal: AbortSignal): Promise<boolean> {
    const prunes = this.#d.windows.closeAll()
    if (prunes.length > 0)
      this.#d.logger.info({ windows: prunes.length }, 'stream quiet: closing open #sync windows')
    return this.#pushPrunes(prunes, sink, signal)
  }

  #fault(reason: string): void {
    this.#d.metrics.sourceFaultsTotal.inc({ source: SOURCE, reason })
  }

  /** The cursor an item carries: held back before any open window's `#sync`. */
  #cursorAt(accepted: number | null) {
    return accepted === null ? null : seqCursor(this.#d.windows.safeCursor(accepted))
  }

  async #pushPrunes(events: IndexEvent[], sink: Sink, signal: AbortSignal) {
    for (const event of events) {
      const item = { event, cursor: this.#cursorAt(this.#d.cursor.accepted), timeUs: null }
      if (!(await pushUnlessAborted(sink, item, signal))) return false
    }
    return true
  }

  async #onEvent(f: EventFrame, bytes: number, sink: Sink, signal: AbortSignal) {
    const { cursor, windows } = this.#d
    if (cursor.seen(f.seq)) return true
    const at = cursor.position(f.seq, f.type === 'sync' ? f.timeUs : (f.item.timeUs ?? 0))
    // A refused (future) time must not end every open window: the quiet rule skips it.
    const timeUs = at.timeUs ?? 0
    if (!(await this.#pushPrunes(windows.closeBefore(closingOf(f, timeUs)), sink, signal)))
      return false
    if (f.type === 'sync' && !(await this.#openWindow(f, timeUs, sink, signal))) return false
    const event = f.type === 'item' ? await this.#verified(f) : null
    cursor.handled(f.seq, at.cursor)
    const item: SourceItem = { event, cursor: this.#cursorAt(at.cursor), timeUs: at.timeUs, bytes }
    return pushUnlessAborted(sink, item, signal)
  }

  /** A `#sync`: the repo's records are replaced by what its window sees. */
  #openWindow(
    f: Extract<V2Frame, { type: 'sync' }>,
    timeUs: number,
    sink: Sink,
    signal: AbortSignal,
  ) {
    this.#d.logger.info(
      { did: f.did, rev: f.rev, seq: f.seq },
      'repo resynced upstream: replacing its records',
    )
    return this.#pushPrunes(this.#d.windows.open(f.did, f.rev, f.seq, timeUs), sink, signal)
  }

  /** An identity event with its handle verified both ways; other events as they came. */
  async #verified(f: Extract<V2Frame, { type: 'item' }>): Promise<IndexEvent | null> {
    const event = f.item.event
    if (event?.kind !== 'identity') return event
    const handle = await this.#d.verify(event.did, f.unverifiedHandle)
    return { ...event, handle } satisfies IdentityEvent
  }

  async #onSkip(
    f: Extract<V2Frame, { type: 'skip' }>,
    bytes: number,
    sink: Sink,
    signal: AbortSignal,
  ) {
    if (f.unknownType) {
      this.#fault('unknown_type')
      this.#d.logger.warn({ seq: f.seq }, `skipped frame: ${f.skip.detail}`)
    } else {
      recordSkip(this.#d, SOURCE, f.skip, { seq: f.seq })
    }
    // A readable seq still moves the cursor past the frame, as a filtered one would.
    const { cursor } = this.#d
    if (f.seq === undefined || f.timeUs === undefined || cursor.seen(f.seq)) return true
    const at = cursor.position(f.seq, f.timeUs)
    cursor.handled(f.seq, at.cursor)
    const item = { event: null, cursor: this.#cursorAt(at.cursor), timeUs: at.timeUs, bytes }
    return pushUnlessAborted(sink, item, signal)
  }
}

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
