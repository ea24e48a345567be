import type { Logger } from 'pino'
import type { SourceItem } from '../model/events.ts'
import type { CursorRefusal, Metrics } from '../observe/metrics.ts'

// Which source positions may become the stored cursor and the lag figures, one pure rule for
// every source: a hostile time or seq stored as the cursor would hide every later event after
// a restart. The caller passes the clock, and counts and logs refusals with a RefusalReporter.

/** How far a source time may run ahead of our clock: clock skew, not hostile input. */
export const MAX_FUTURE_SKEW_US = 5 * 60 * 1_000_000

/** A seq jump larger than this needs the next frame to confirm it (upstreams number contiguously). */
export const MAX_SEQ_LEAP = 1_000_000

/** A time fit for the cursor and the lag: a safe integer ≥ 0, at most the skew ahead of now. */
export function checkSourceTime(timeUs: number, nowUs: number): CursorRefusal | null {
  if (!Number.isSafeInteger(timeUs) || timeUs < 0) return 'bad_time'
  return timeUs > nowUs + MAX_FUTURE_SKEW_US ? 'future_time' : null
}

export interface TimeAdvance {
  /** The cursor after this item: never behind `highWater`, null while nothing was accepted. */
  cursor: number | null
  /** The item's time for the lag figures, or null when refused. */
  timeUs: number | null
  refusal: CursorRefusal | null
}

/** For `time_us` cursors: a refused time leaves the cursor; it never moves backwards. */
export function advanceTimeCursor(
  highWater: number | null,
  timeUs: number,
  nowUs: number,
): TimeAdvance {
  const refusal = checkSourceTime(timeUs, nowUs)
  if (refusal) return { cursor: highWater, timeUs: null, refusal }
  return { cursor: highWater === null ? timeUs : Math.max(highWater, timeUs), timeUs, refusal }
}

export interface SeqTrack {
  /** The last seq accepted as the cursor (the start cursor, before any frame). */
  accepted: number | null
  /** A seq that broke the sequence, waiting for the next frame to confirm it. */
  candidate: number | null
}

export interface SeqAdvance {
  track: SeqTrack
  /** The seq to use as the cursor, or null when refused (the cursor stays at `accepted`). */
  cursor: number | null
  refusal: CursorRefusal | null
}

const continues = (from: number, seq: number) => seq > from && seq - from <= MAX_SEQ_LEAP

/**
 * For upstream seqs: a seq that does not continue the sequence is refused, and adopted once the
 * next seq continues from it (a real renumbering; going back only replays idempotent writes).
 */
export function advanceSeqCursor(track: SeqTrack, seq: number): SeqAdvance {
  if (!Number.isSafeInteger(seq) || seq < 0) {
    return { track, cursor: null, refusal: seq < 0 ? 'seq_backwards' : 'seq_leap' }
  }
  const { accepted, candidate } = track
  if (
    accepted === null ||
    continues(accepted, seq) ||
    (candidate !== null && continues(candidate, seq))
  ) {
    return { track: { accepted: seq, candidate: null }, cursor: seq, refusal: null }
  }
  const refusal = seq <= accepted ? 'seq_backwards' : 'seq_leap'
  return { track: { accepted, candidate: seq }, cursor: null, refusal }
}

export interface GuardedFrame {
  track: SeqTrack
  items: SourceItem[]
  /** What was refused in this frame, each reason once: count and log them. */
  refusals: CursorRefusal[]
}

/** A refused seq takes the cursor off every item (still applied), a bad time the lag figure. */
export function guardSeqFrame(
  track: SeqTrack,
  seq: number,
  items: SourceItem[],
  nowUs: number,
): GuardedFrame {
  const adv = advanceSeqCursor(track, seq)
  const refusals = new Set<CursorRefusal>()
  if (adv.refusal) refusals.add(adv.refusal)
  const out = items.map((it) => {
    const timeRefusal = it.timeUs === null ? 'bad_time' : checkSourceTime(it.timeUs, nowUs)
    if (timeRefusal) refusals.add(timeRefusal)
    return {
      ...it,
      cursor: adv.cursor === null ? null : it.cursor,
      timeUs: timeRefusal ? null : it.timeUs,
    }
  })
  return { track: adv.track, items: out, refusals: [...refusals] }
}

/** Counts every refusal and logs a few per window: a hostile stream must not flood the log. */
export type RefusalReporter = (reason: CursorRefusal, detail: Record<string, unknown>) => void

export interface RefusalReporterOptions {
  source: string
  logger: Logger
  metrics: Metrics
  /** Log lines per window; the rest are counted and summed up in the next line. */
  burst?: number
  windowMs?: number
  now?: () => number
}

export function createRefusalReporter(opts: RefusalReporterOptions): RefusalReporter {
  const burst = opts.burst ?? 10
  const windowMs = opts.windowMs ?? 60_000
  const now = opts.now ?? (() => performance.now())
  let windowStart = Number.NEGATIVE_INFINITY
  let logged = 0
  let suppressed = 0
  return (reason, detail) => {
    opts.metrics.cursorRefusedTotal.inc({ source: opts.source, reason })
    const t = now()
    if (t - windowStart >= windowMs) {
      windowStart = t
      logged = 0
    }
    if (logged >= burst) {
      suppressed++
      return
    }
    logged++
    // `detail` carries positions only (time_us, seq): DIDs of hostile input stay out of it.
    opts.logger.warn(
      { source: opts.source, reason, ...detail, suppressedBefore: suppressed },
      `position refused for the cursor and the lag (${reason}); the event itself is not lost`,
    )
    suppressed = 0
  }
}
