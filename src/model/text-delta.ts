import { diffLines } from 'diff'

// Line deltas between two revisions of a prompt, for storage. A recompile changes a few
// lines (the memory block, the date in the footer) of a text of tens of KB; storing those
// lines instead of the text is what keeps a long revision history near one copy. The line
// diff is the `diff` package's (Myers, bounded by maxEditLength so a rewrite costs a
// bounded amount of work and is stored whole); the encoding is ours and trivial:
// a JSON array of ops, n >= 0 copies n UTF-16 units of the base, -n skips n, a string is
// inserted. Positions are units, not lines, so decoding depends on no tokenizer.

/** Edits (lines added plus removed) beyond which a text is stored whole instead. */
const MAX_EDITS = 200
/** A delta must save at least this share of the text, or the text is stored whole. */
const MAX_DELTA_RATIO = 0.8

export type DeltaOp = number | string

/** A delta turning `base` into `next`, or null when storing `next` whole is as good. */
export function encodeDelta(base: string, next: string): string | null {
  const changes = diffLines(base, next, { maxEditLength: MAX_EDITS })
  if (!changes) return null
  const ops: DeltaOp[] = []
  for (const c of changes) {
    if (c.added) ops.push(c.value)
    else if (c.removed) ops.push(-c.value.length)
    else ops.push(c.value.length)
  }
  const body = JSON.stringify(ops)
  if (body.length > next.length * MAX_DELTA_RATIO) return null
  // Checked here, where both texts are at hand: a delta that does not round-trip is never
  // stored (the text is, whole).
  return applyDelta(base, body) === next ? body : null
}

export function applyDelta(base: string, body: string): string {
  const ops = JSON.parse(body) as DeltaOp[]
  const parts: string[] = []
  let pos = 0
  for (const op of ops) {
    if (typeof op === 'string') parts.push(op)
    else if (op >= 0) {
      parts.push(base.slice(pos, pos + op))
      pos += op
    } else pos -= op
  }
  return parts.join('')
}
