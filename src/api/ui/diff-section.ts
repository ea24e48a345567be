import { apiGet } from './api-client.ts'
import { diffView, type Hunk } from './diff-view.ts'
import { type Html, html } from './html.ts'
import type { PageContext } from './page-route.ts'

interface DiffAnswer {
  from: unknown
  to: unknown
  content?: Hunk[] | null
  coreMemory?: Hunk[] | null
  /** Why there is no diff (a revision indexed before contents were kept). */
  note?: string | null
}

const revOf = (v: unknown): string =>
  typeof v === 'string'
    ? v
    : v && typeof v === 'object' && typeof (v as { rev?: unknown }).rev === 'string'
      ? (v as { rev: string }).rev
      : '?'

/** The diff between two revisions of one prompt, from the API's diff endpoint. */
export async function diffSection(
  ctx: PageContext,
  base: string,
  sel: { from?: string; to?: string },
): Promise<Html> {
  const d = await apiGet<DiffAnswer>(ctx.app, `${base}/diff`, { from: sel.from, to: sel.to })
  return html`<section id="diff" aria-labelledby="diff-h" class="panel wide">
<h2 id="diff-h">Changes from <code>${d.from === null ? 'nothing' : revOf(d.from)}</code> to <code>${revOf(d.to)}</code></h2>
${d.note ? html`<p class="warn">${d.note}</p>` : ''}
${d.from === null ? html`<p class="muted">This is the first revision: everything is new.</p>` : ''}
<h3>Content</h3>${diffView(d.content, 'content')}
<h3>Core memory</h3>${diffView(d.coreMemory, 'core memory')}
</section>`
}
