import { diffLines } from 'diff'

// Line diffs for people (SPEC section 6): hunks of whole lines, unchanged runs collapsed. The
// diff's work is bounded so a large prompt never stalls a request; past the bound it is the
// coarse but exact diff (common head and tail kept, everything between replaced).

export interface Hunk {
  op: 'equal' | 'insert' | 'delete'
  lines: string[]
  /** On a collapsed run: how many unchanged lines stand here instead of `lines` (empty). */
  skipped?: number
}

/** Unchanged lines shown on each side of a change. */
export const CONTEXT = 3
const MAX_EDIT_LINES = 4000
const TIMEOUT_MS = 250

const splitLines = (text: string): string[] => {
  if (text === '') return []
  const lines = text.split('\n')
  if (lines.at(-1) === '') lines.pop()
  return lines
}

export function lineDiff(from: string, to: string): Hunk[] {
  const changes = diffLines(from, to, { maxEditLength: MAX_EDIT_LINES, timeout: TIMEOUT_MS })
  const raw: Hunk[] = changes
    ? changes.map((c) => ({
        op: c.added ? 'insert' : c.removed ? 'delete' : 'equal',
        lines: splitLines(c.value),
      }))
    : coarseDiff(splitLines(from), splitLines(to))
  return collapse(raw.filter((h) => h.lines.length > 0))
}

function coarseDiff(a: string[], b: string[]): Hunk[] {
  let head = 0
  while (head < a.length && head < b.length && a[head] === b[head]) head++
  let tail = 0
  while (
    tail < a.length - head &&
    tail < b.length - head &&
    a[a.length - 1 - tail] === b[b.length - 1 - tail]
  )
    tail++
  return [
    { op: 'equal', lines: a.slice(0, head) },
    { op: 'delete', lines: a.slice(head, a.length - tail) },
    { op: 'insert', lines: b.slice(head, b.length - tail) },
    { op: 'equal', lines: a.slice(a.length - tail) },
  ]
}

function collapse(hunks: Hunk[]): Hunk[] {
  const out: Hunk[] = []
  for (const [i, h] of hunks.entries()) {
    const keepHead = i > 0 ? CONTEXT : 0
    const keepTail = i < hunks.length - 1 ? CONTEXT : 0
    if (h.op !== 'equal' || h.lines.length <= keepHead + keepTail + 1) {
      out.push(h)
      continue
    }
    if (keepHead > 0) out.push({ op: 'equal', lines: h.lines.slice(0, keepHead) })
    out.push({ op: 'equal', lines: [], skipped: h.lines.length - keepHead - keepTail })
    if (keepTail > 0) out.push({ op: 'equal', lines: h.lines.slice(h.lines.length - keepTail) })
  }
  return out
}
