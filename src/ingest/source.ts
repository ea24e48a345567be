import type { IndexEvent } from '../model/events.ts'

/**
 * One unit read from a source. `event` is null for frames that carry nothing we index
 * (other collections, skipped bad input): they still move the cursor and the lag, when their
 * position passed cursor-guard.ts.
 */
export interface SourceItem {
  event: IndexEvent | null
  /**
   * The source's own cursor after this item: `time_us` (Jetstream, replay) or `seq`; null
   * while no position was accepted yet (the item is applied, the stored cursor stays put).
   */
  cursor: number | null
  /** Source time of this item, µs since the epoch; null when refused (not used for the lag). */
  timeUs: number | null
  /** Size of the input it came from (line, message, frame): bounds queues by memory. */
  bytes?: number
}

export interface Sink {
  /** Resolves once the item is queued; while the write queue is full it waits (backpressure). */
  push(item: SourceItem): Promise<void>
}

/** A hole the source knows it left in the stream (backfill needed): /v1/stats and /readyz. */
export interface IngestGap {
  /** `CursorTooOld` (the upstream refused the cursor) or `OutdatedCursor` (it clamped it). */
  reason: string
  at: string
  /** The cursor held when it happened. */
  cursor: number | null
  /** What the upstream said. */
  message: string
  /** What the operator should do. */
  action: string
}

export interface Source {
  /** `jetstream`, `firehose` or `replay`: the `source` metric label and cursor namespace. */
  readonly name: string
  /** The URL or file: cursors are kept per (name, key). */
  readonly key: string
  /** What the cursor counts: a stored `time_us` in the future is refused at start. */
  readonly cursorKind?: 'time_us' | 'seq'
  /**
   * Reads until `signal` aborts (or, for finite sources, the input ends), pushing into `sink`.
   * `startCursor` is the stored cursor, or null to start at the live tip / top of file.
   */
  run(sink: Sink, startCursor: number | null, signal: AbortSignal): Promise<void>
  /**
   * Settles what must be known before the cursor is read (Jetstream wire auto-detection:
   * `key` names the wire chosen). Absent: nothing to settle.
   */
  prepare?(signal: AbortSignal): Promise<void>
  /** The newest gap this source left, if any. */
  readonly gap?: IngestGap | null
}
