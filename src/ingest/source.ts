import type { CursorKind, SourceCursor } from '../model/cursor.ts'
import type { IngestGap, Sink, SourceItem } from '../model/events.ts'
import type { Provenance } from '../model/rows.ts'

export interface Source {
  /** `jetstream`, `firehose` or `replay`: the `source` metric label and cursor namespace. */
  readonly name: string
  /** The URL or file: cursors are kept per (name, key). */
  readonly key: string
  /** What a record without proof of its own is stamped as having come through (SPEC 4). */
  readonly provenance: Provenance['source']
  /** The kinds of stored cursor this source starts from; others are refused at start. */
  readonly resumesFrom: readonly CursorKind[]
  /** Pushes into `sink` until `signal` aborts or the input ends; null starts at the tip. */
  run(sink: Sink, startCursor: SourceCursor | null, signal: AbortSignal): Promise<void>
  /** Settles what must be known before the cursor is read (the Jetstream wire, named by `key`). */
  prepare?(signal: AbortSignal): Promise<void>
  /** The newest gap this source left, if any. */
  readonly gap?: IngestGap | null
}

/**
 * Pushes unless `signal` aborts first: a source must stop promptly on shutdown even while
 * a full write queue holds its push. Returns false when aborted.
 */
export async function pushUnlessAborted(
  sink: Sink,
  item: SourceItem,
  signal: AbortSignal,
): Promise<boolean> {
  if (signal.aborted) return false
  let onAbort: (() => void) | undefined
  const aborted = new Promise<false>((resolve) => {
    onAbort = () => resolve(false)
    signal.addEventListener('abort', onAbort, { once: true })
  })
  try {
    return await Promise.race([sink.push(item).then(() => !signal.aborted), aborted])
  } finally {
    signal.removeEventListener('abort', onAbort!)
  }
}
