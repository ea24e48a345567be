import { type Html, html } from './html.ts'

// A search hit's snippet: plain text with the offsets of the matched words, shown with the
// matches marked. The offsets come from the server but are still checked against the text.

interface SnippetShape {
  text: string
  matches: Array<{ start: number; end: number }>
}

function shapeOf(v: unknown): SnippetShape | null {
  if (typeof v === 'string') return { text: v, matches: [] }
  if (!v || typeof v !== 'object') return null
  const o = v as Record<string, unknown>
  if (typeof o.text !== 'string') return null
  const raw = Array.isArray(o.matches) ? o.matches : []
  const matches = raw
    .map((m) =>
      Array.isArray(m) ? { start: m[0], end: m[1] } : (m as { start: unknown; end: unknown }),
    )
    .filter(
      (m): m is { start: number; end: number } =>
        Number.isInteger(m?.start) &&
        Number.isInteger(m?.end) &&
        (m.start as number) < (m.end as number),
    )
  return { text: o.text, matches }
}

export function snippetView(v: unknown): Html {
  const s = shapeOf(v)
  if (!s) return html``
  const parts: Html[] = []
  let at = 0
  for (const m of [...s.matches].sort((a, b) => a.start - b.start)) {
    if (m.start < at || m.end > s.text.length) continue
    parts.push(html`${s.text.slice(at, m.start)}<mark>${s.text.slice(m.start, m.end)}</mark>`)
    at = m.end
  }
  parts.push(html`${s.text.slice(at)}`)
  return html`<p class="snippet">${parts}</p>`
}
