import type { SourceItem } from '../model/events.ts'
// Which source positions may become the stored cursor and the lag figures. One rule for every
// source (replay, Jetstream v1 and v2, firehose): a stored cursor is where the next start
// skips to, so a single hostile time or seq that became the cursor would hide every later
// event after a restart, and a future time would make the lag read 0 forever. Pure: the
// caller passes the clock, counts and logs the refusals (see cursor-refusals.ts).

import type { CursorRefusal } from '../observe/metrics.ts'

/** How far a source time may run ahead of our clock: clock skew, not hostile input. */
export const MAX_FUTURE_SKEW_US = 5 * 60 * 1_000_000

/**
 * How far one seq may jump ahead of the last accepted one before it needs the next frame
 * to confirm it. A relay or PDS numbers its events contiguously (gaps are rare and small);
 * a larger jump is accepted once the following frame continues from it.
 */
export const MAX_SEQ_LEAP = 1_000_000

// Reasons (the metric's label values, in metrics.ts): `future_time` (more than the skew ahead
// of now), `bad_time` (not readable), `seq_backwards` / `seq_leap` (a seq that does not
// continue the sequence, not yet confirmed by the next frame), `stored_cursor` (a stored
// cursor that is a future time, or of a kind the source cannot resume from: ignored and reset
// at start, cli/start-cursor.ts).
export type { CursorRefusal }

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

/**
 * For `time_us` cursors (replay, Jetstream v1). `timeUs` must come from an event whose DID and
 * time could be read (jetstream/event.ts decides that); a refused time leaves the cursor where
 * it was. The cursor never moves backwards: rewound replays are older than what was read.
 */
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
 * For upstream seqs (firehose, Jetstream v2). A seq continues the sequence when it is above
 * the last accepted one by at most MAX_SEQ_LEAP. One that does not (a hostile huge seq, or one
 * going backwards) is refused for the cursor; if the next seq continues from it, the upstream
 * really renumbered (a relay reset, a jump) and the new numbering is adopted, even backwards:
 * going back only replays idempotent writes, going forward on one frame's word could skip.
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

/**
 * The items of one seq-numbered frame (firehose, Jetstream v2), their positions checked: a
 * refused seq takes the cursor off every item (they are still applied), a refused or missing
 * time takes the item out of the lag figures.
 */
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
