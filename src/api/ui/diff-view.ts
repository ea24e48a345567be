import { type Html, html } from './html.ts'

// Line diffs as the API gives them. Long equal runs fold into a <details>, and each hunk is
// one <pre> rather than one element per line, so a diff of two large prompts stays light.

export interface Hunk {
  op: 'equal' | 'insert' | 'delete'
  lines?: unknown[]
  /** Lines of an equal run the API left out. */
  count?: number
  skipped?: number
}

const CONTEXT = 3
const FOLD_OVER = 2 * CONTEXT + 4

const text = (lines: string[]): string => lines.map((l) => `  ${l}`).join('\n')
const mark = { insert: '+', delete: '-', equal: ' ' } as const

function linesOf(h: Hunk): string[] {
  return (Array.isArray(h.lines) ? h.lines : []).map((l) => (typeof l === 'string' ? l : String(l)))
}

function omitted(h: Hunk): number {
  const n = h.skipped ?? h.count
  const shown = linesOf(h).length
  return typeof n === 'number' && Number.isInteger(n) && n > shown ? n - shown : 0
}

function equalRun(h: Hunk, first: boolean, last: boolean): Html {
  const lines = linesOf(h)
  const hidden = omitted(h)
  if (lines.length === 0)
    return hidden ? html`<div class="fold muted">⋯ ${hidden} unchanged lines</div>` : html``
  const note = hidden ? html`<div class="fold muted">⋯ ${hidden} unchanged lines</div>` : ''
  if (lines.length <= FOLD_OVER) return html`${note}<pre class="d-eq">${text(lines)}</pre>`
  const head = first ? [] : lines.slice(0, CONTEXT)
  const tail = last ? [] : lines.slice(-CONTEXT)
  const middle = lines.slice(head.length, lines.length - tail.length)
  return html`${head.length ? html`<pre class="d-eq">${text(head)}</pre>` : ''}<details class="fold"><summary>${middle.length + hidden} unchanged lines</summary><pre class="d-eq">${text(middle)}</pre></details>${tail.length ? html`<pre class="d-eq">${text(tail)}</pre>` : ''}`
}

export function diffView(hunks: Hunk[] | null | undefined, label: string): Html {
  if (!hunks || hunks.length === 0)
    return html`<p class="muted">${label}: no lines on either side.</p>`
  if (hunks.every((h) => h.op === 'equal')) return html`<p class="muted">${label}: no change.</p>`
  const parts = hunks.map((h, i) => {
    if (h.op === 'equal') return equalRun(h, i === 0, i === hunks.length - 1)
    const cls = h.op === 'insert' ? 'd-ins' : 'd-del'
    const word = h.op === 'insert' ? 'added' : 'removed'
    const lines = linesOf(h).map((l) => `${mark[h.op]} ${l}`)
    return html`<pre class="${cls}" aria-label="${lines.length} lines ${word}">${lines.join('\n')}</pre>`
  })
  return html`<div class="diff" role="region" aria-label="${label} diff" tabindex="0">${parts}</div>`
}
