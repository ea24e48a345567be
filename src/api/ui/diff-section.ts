import { READS } from '../catalog/reads.ts'
import { diffView } from './diff-view.ts'
import { type Html, html } from './html.ts'
import type { PageInput } from './page-route.ts'

/** The diff between two revisions of one prompt, as the API's diff endpoint answers it. */
export async function diffSection(
  input: PageInput,
  params: { did: string; rkey: string },
  sel: { from?: string; to?: string },
): Promise<Html> {
  const d = await input.read(READS.getPromptDiff, { ...params, from: sel.from, to: sel.to })
  return html`<section id="diff" aria-labelledby="diff-h" class="panel wide">
<h2 id="diff-h">Changes from <code>${d.from === null ? 'nothing' : d.from}</code> to <code>${d.to}</code></h2>
${d.note ? html`<p class="warn">${d.note}</p>` : ''}
${d.from === null ? html`<p class="muted">This is the first revision: everything is new.</p>` : ''}
<h3>Content</h3>${diffView(d.content, 'content')}
<h3>Core memory</h3>${diffView(d.coreMemory, 'core memory')}
</section>`
}
