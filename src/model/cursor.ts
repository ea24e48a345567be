// A source's position in its upstream, saying what it counts. Two kinds exist and they never
// compare with each other: an upstream `seq` (the firehose's, a Jetstream v2 server's) and a
// source time `time_us` (Jetstream v1, a replay file). A position is stored with its kind
// (ingest_cursors.kind), and a source resumes only from the kinds it names
// (ingest/source.ts `resumesFrom`; cli/start-cursor.ts refuses the others).

export type CursorKind = 'seq' | 'time_us'

export interface SourceCursor {
  readonly kind: CursorKind
  readonly value: number
}

export const seqCursor = (value: number): SourceCursor => ({ kind: 'seq', value })
export const timeCursor = (value: number): SourceCursor => ({ kind: 'time_us', value })

/** The value of `c` when it counts `kind`, else null: a position of another kind says nothing. */
export function valueOfKind(c: SourceCursor | null, kind: CursorKind): number | null {
  return c !== null && c.kind === kind ? c.value : null
}

/**
 * The value of a start cursor a source can only take as `kind`. Another kind here is a
 * caller's mistake (the CLI refuses it before the source runs), so it throws rather than
 * guess what the number meant.
 */
export function startValueOf(c: SourceCursor | null, kind: CursorKind, source: string) {
  if (c === null || c.kind === kind) return c?.value ?? null
  throw new TypeError(`${source} resumes from a ${kind} cursor, not a ${c.kind} (${c.value})`)
}
