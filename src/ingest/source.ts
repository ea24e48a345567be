import type { CursorKind, SourceCursor } from '../model/cursor.ts'
import type { Sink } from '../model/events.ts'
import type { Provenance } from '../model/rows.ts'

/** A hole the source knows it left in the stream (backfill needed): /v1/stats and /readyz. */
export interface IngestGap {
  /** `CursorTooOld` (the upstream refused the cursor) or `OutdatedCursor` (it clamped it). */
  reason: string
  at: string
  /** The value of the cursor held when it happened. */
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
  /**
   * What a record read here is stamped as having come through when it carries no proof of
   * its own (SPEC 4): the pipeline marks such commits unverified from this source.
   */
  readonly provenance: Provenance['source']
  /**
   * The kinds of stored position this source can start from (model/cursor.ts). A stored
   * cursor of another kind is refused at start, and a stored `time_us` in the future too
   * (cli/start-cursor.ts).
   */
  readonly resumesFrom: readonly CursorKind[]
  /**
   * Reads until `signal` aborts (or, for finite sources, the input ends), pushing into `sink`.
   * `startCursor` is the stored cursor, one of `resumesFrom`'s kinds, or null to start at the
   * live tip / top of file.
   */
  run(sink: Sink, startCursor: SourceCursor | null, signal: AbortSignal): Promise<void>
  /**
   * Settles what must be known before the cursor is read (Jetstream wire auto-detection:
   * `key` names the wire chosen). Absent: nothing to settle.
   */
  prepare?(signal: AbortSignal): Promise<void>
  /** The newest gap this source left, if any. */
  readonly gap?: IngestGap | null
}
