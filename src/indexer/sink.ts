import type { IndexEvent } from '../model/events.ts'

// The indexer's input port: what every source (in src/ingest/) hands the pipeline. It lives
// here, below the sources, so the indexer never imports the layer that feeds it.

/**
 * One unit read from a source. `event` is null for frames that carry nothing we index
 * (other collections, skipped bad input): they still move the cursor and the lag, when their
 * position passed ingest/cursor-guard.ts.
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
