import { type Html, html } from './html.ts'

// The prompt text with its core-memory part marked. The text goes out as one text node per
// part (never one element per line), so a 200,000-byte prompt is a single cheap <pre>.

export function contentView(content: string | null, coreMemory: string | null): Html {
  if (content === null) return html`<p class="muted">This record has no content string.</p>`
  const at = coreMemory ? content.indexOf(coreMemory) : -1
  const body =
    coreMemory && at >= 0
      ? html`${content.slice(0, at)}<mark class="core" title="core memory">${coreMemory}</mark>${content.slice(at + coreMemory.length)}`
      : html`${content}`
  const note =
    coreMemory === null
      ? html`<p class="muted">No coreMemory in this record.</p>`
      : at >= 0
        ? html`<p class="legend"><mark class="core">Marked</mark>: the core-memory block (${coreMemory.length} characters, from character ${at}).</p>`
        : html`<p class="warn">The coreMemory is not part of the content (coreMemoryDetached); it is shown below.</p>`
  const detached =
    coreMemory && at < 0
      ? html`<h3>coreMemory</h3><pre class="text" tabindex="0" aria-label="core memory">${coreMemory}</pre>`
      : ''
  return html`${note}<div class="copyable"><pre class="text" id="content" tabindex="0" aria-label="prompt content">${body}</pre></div>${detached}`
}
