import type { Logger } from 'pino'
import { type SourceCursor, seqCursor, valueOfKind } from '../../model/cursor.ts'
import type { IdentityEvent, IndexEvent, Sink, SourceItem } from '../../model/events.ts'
import type { Metrics } from '../../observe/metrics.ts'
import { pushUnlessAborted } from '../abortable.ts'
import { advanceSeqCursor, checkSourceTime, type SeqTrack } from '../cursor-guard.ts'
import { createRefusalReporter } from '../cursor-refusals.ts'
import { recordSkip } from '../record-skip.ts'
import { parseV2Frame, type V2Frame } from './v2-frame.ts'
import type { SyncWindows, Verdict } from './v2-sync.ts'
import { decodeZstdFrame, type ZstdDictionary, ZstdFrameError } from './v2-zstd.ts'

// One Jetstream v2 message → pushes into the sink. Owns the seq rules (inclusive resume,
// duplicates dropped, backwards seqs refused), `#sync` windows, and zstd decoding.

export const SOURCE = 'jetstream'

export interface HandlerDeps {
  logger: Logger
  metrics: Metrics
  collections: ReadonlySet<string>
  windows: SyncWindows
  verify: (did: string, claimed: string | null) => Promise<string | null>
  maxDecodedBytes: number
  /** `#info OutdatedCursor`: the server clamped a timestamp cursor (events were missed). */
  onOutdatedCursor: (message: string) => void
}

export interface HandlerState {
  /**
   * What a reconnect resumes from: the newest seq the cursor guard accepted (inclusive, so it
   * is dropped when sent again), or the `time_us` the run started from until a seq arrives
   * (the server translates a timestamp cursor to its first seq at or after it, SPEC 5).
   */
  resume: SourceCursor | null
  /** Highest seq of the current session: a lower one after it is out of order. */
  sessionSeq: number | null
  /** The seq accepted as the cursor (cursor-guard.ts); null before the first one. */
  track: SeqTrack
  dictionary: ZstdDictionary | null
  /** Set when a session ended on an error frame or an undecodable dictionary. */
  ended: { error: string; message: string } | null
}

export function createV2Handler(deps: HandlerDeps, state: HandlerState) {
  const { logger, metrics } = deps
  const fault = (reason: string) => metrics.sourceFaultsTotal.inc({ source: SOURCE, reason })
  const refused = createRefusalReporter({ source: SOURCE, logger, metrics })

  function decode(data: Buffer, binary: boolean): string | null {
    metrics.jetstreamBytesTotal.inc({ stage: 'wire' }, data.length)
    if (!binary) {
      metrics.jetstreamBytesTotal.inc({ stage: 'decoded' }, data.length)
      return data.toString('utf8')
    }
    if (!state.dictionary) {
      fault('zstd_unexpected')
      logger.warn({ bytes: data.length }, 'binary frame without a zstd dictionary: skipped')
      return null
    }
    try {
      const text = decodeZstdFrame(data, state.dictionary, deps.maxDecodedBytes)
      metrics.jetstreamBytesTotal.inc({ stage: 'decoded' }, Buffer.byteLength(text))
      return text
    } catch (err) {
      if (!(err instanceof ZstdFrameError)) throw err
      fault(err.reason)
      logger.warn({ err, bytes: data.length }, `undecodable zstd frame (${err.reason})`)
      if (err.reason === 'zstd_dictionary')
        state.ended = { error: 'UnknownZstdDictionary', message: err.message }
      return null
    }
  }

  async function push(item: SourceItem, sink: Sink, signal: AbortSignal): Promise<boolean> {
    return pushUnlessAborted(sink, item, signal)
  }

  async function pushPrunes(events: IndexEvent[], sink: Sink, signal: AbortSignal) {
    for (const event of events) {
      const a = state.track.accepted
      const cursor = a === null ? null : seqCursor(deps.windows.safeCursor(a))
      if (!(await push({ event, cursor, timeUs: null }, sink, signal))) return false
    }
    return true
  }

  /** The shared cursor rule (cursor-guard.ts): a seq leap or a future time is refused. */
  function position(seq: number, timeUs: number): { cursor: number | null; timeUs: number | null } {
    const adv = advanceSeqCursor(state.track, seq)
    state.track = adv.track
    if (adv.refusal) refused(adv.refusal, { seq, cursor: state.track.accepted })
    const timeRefusal = checkSourceTime(timeUs, Date.now() * 1000)
    if (timeRefusal) refused(timeRefusal, { seq, timeUs })
    return { cursor: adv.cursor, timeUs: timeRefusal ? null : timeUs }
  }

  /**
   * A handled frame: the session has read up to its seq, but a reconnect resumes only from a
   * seq the cursor guard accepted, so a hostile huge seq never becomes the reconnect cursor.
   */
  function resumeFrom(seq: number, accepted: number | null): void {
    state.sessionSeq = seq
    if (accepted !== null) state.resume = seqCursor(accepted)
  }

  /** True when `seq` was handled already (inclusive resume, at-least-once delivery). */
  function seen(seq: number): boolean {
    if (state.sessionSeq !== null && seq < state.sessionSeq) {
      fault('seq_backwards')
      logger.warn({ seq, after: state.sessionSeq }, 'seq went backwards: frame skipped')
      return true
    }
    // Only a seq resume sends a handled frame again: a time_us one was translated by the server.
    const last = valueOfKind(state.resume, 'seq')
    return last !== null && seq <= last
  }

  async function onEvent(
    f: Extract<V2Frame, { type: 'item' | 'sync' }>,
    bytes: number,
    sink: Sink,
    signal: AbortSignal,
  ) {
    if (seen(f.seq)) return true
    const w = deps.windows
    const at = position(f.seq, f.type === 'sync' ? f.timeUs : (f.item.timeUs ?? 0))
    // A refused (future) time must not end every open window: the quiet rule skips it.
    const timeUs = at.timeUs ?? 0
    if (!(await pushPrunes(w.closeBefore(closingOf(f, timeUs)), sink, signal))) return false
    if (f.type === 'sync' && !(await openWindow(f, timeUs, sink, signal))) return false
    const event = f.type === 'item' ? await verified(f) : null
    resumeFrom(f.seq, at.cursor)
    const cursor = at.cursor === null ? null : seqCursor(w.safeCursor(at.cursor))
    const item: SourceItem = { event, cursor, timeUs: at.timeUs, bytes }
    return push(item, sink, signal)
  }

  /** A `#sync`: the repo's records are replaced by what its window sees. */
  function openWindow(
    f: Extract<V2Frame, { type: 'sync' }>,
    timeUs: number,
    sink: Sink,
    signal: AbortSignal,
  ): Promise<boolean> {
    logger.info(
      { did: f.did, rev: f.rev, seq: f.seq },
      'repo resynced upstream: replacing its records',
    )
    return pushPrunes(deps.windows.open(f.did, f.rev, f.seq, timeUs), sink, signal)
  }

  /** An identity event with its handle verified both ways; other events as they came. */
  async function verified(f: Extract<V2Frame, { type: 'item' }>): Promise<IndexEvent | null> {
    const event = f.item.event
    if (event?.kind !== 'identity') return event
    const handle = await deps.verify(event.did, f.unverifiedHandle)
    return { ...event, handle } satisfies IdentityEvent
  }

  async function onSkip(
    f: Extract<V2Frame, { type: 'skip' }>,
    bytes: number,
    sink: Sink,
    signal: AbortSignal,
  ) {
    if (f.unknownType) {
      fault('unknown_type')
      logger.warn({ seq: f.seq }, `skipped frame: ${f.skip.detail}`)
    } else {
      recordSkip(deps, SOURCE, f.skip, { seq: f.seq })
    }
    // A readable seq still moves the cursor past the frame, as a filtered one would.
    if (f.seq === undefined || f.timeUs === undefined || seen(f.seq)) return true
    const at = position(f.seq, f.timeUs)
    resumeFrom(f.seq, at.cursor)
    const cursor = at.cursor === null ? null : seqCursor(deps.windows.safeCursor(at.cursor))
    return push({ event: null, cursor, timeUs: at.timeUs, bytes }, sink, signal)
  }

  async function handle(
    data: Buffer,
    binary: boolean,
    sink: Sink,
    signal: AbortSignal,
  ): Promise<Verdict> {
    const text = decode(data, binary)
    if (text === null) return state.ended ? 'end' : 'continue'
    const f = parseV2Frame(text, { collections: deps.collections })
    switch (f.type) {
      case 'error':
        fault(errorFault(f.error))
        logger.warn(
          { error: f.error, message: f.message },
          `Jetstream error frame ${f.error}: reconnecting`,
        )
        state.ended = { error: f.error, message: f.message }
        return 'end'
      case 'info':
        if (f.name === 'OutdatedCursor') deps.onOutdatedCursor(f.message)
        else logger.info({ name: f.name, message: f.message }, 'Jetstream info')
        return 'continue'
      case 'skip':
        return (await onSkip(f, text.length, sink, signal)) ? 'continue' : 'abort'
      default:
        return (await onEvent(f, text.length, sink, signal)) ? 'continue' : 'abort'
    }
  }

  /**
   * No frame for the quiet period: every open `#sync` window ends and its prune is pushed,
   * with the cursor past the last frame handled (no window holds it back any more).
   */
  function closeQuiet(sink: Sink, signal: AbortSignal): Promise<boolean> {
    const prunes = deps.windows.closeAll()
    if (prunes.length > 0)
      logger.info({ windows: prunes.length }, 'stream quiet: closing open #sync windows')
    return pushPrunes(prunes, sink, signal)
  }

  return { handle, closeQuiet }
}

/** What an event frame closes windows before: its repo's position, or just its time. */
function closingOf(f: Extract<V2Frame, { type: 'item' | 'sync' }>, timeUs: number) {
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
