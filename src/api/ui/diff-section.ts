import { READS } from '../catalog/reads.ts'
import type { Hunk } from '../line-diff.ts'
import type { DiffParts } from '../revision-reads.ts'
import { type Html, html } from './html.ts'
import type { PageInput } from './page-route.ts'

/** Memory files named in a kind line; the rest are counted (a record may name thousands). */
const FILES_SHOWN = 8
const NAME_CHARS = 80

const shortName = (n: string) => (n.length > NAME_CHARS ? `${n.slice(0, NAME_CHARS)}…` : n)

/** What a recompile changed, in words (SPEC 14); null when unknown. */
export function anatomyLabel(
  changed: readonly string[] | null,
  memoryFiles: readonly string[] | null,
): string | null {
  if (changed === null) return null
  if (changed.length === 0) return 'first revision'
  const kinds = new Set(changed)
  if (kinds.has('metadata') && kinds.size === 1) return 'metadata only'
  const files = (memoryFiles ?? []).map(shortName)
  const more = files.length > FILES_SHOWN ? ` and ${files.length - FILES_SHOWN} more` : ''
  const named = files.length > 0 ? `: ${files.slice(0, FILES_SHOWN).join(', ')}${more}` : ''
  const what = (['template', 'memory'] as const).filter((k) => kinds.has(k))
  if (what.length === 0) return 'changed'
  const rest = kinds.has('other') ? ' (and more)' : ''
  return `${what.join(' and ')} changed${kinds.has('memory') ? named : ''}${rest}`
}

const MARK = { insert: '+', delete: '-', equal: ' ' } as const

/**
 * Line diffs as the API gives them: each hunk one <pre> rather than one element per line, so
 * a diff of two large prompts stays light, and an unchanged run the API left out its count.
 */
function diffView(hunks: Hunk[] | null, label: string): Html {
  if (!hunks || hunks.length === 0)
    return html`<p class="muted">${label}: no lines on either side.</p>`
  if (hunks.every((h) => h.op === 'equal')) return html`<p class="muted">${label}: no change.</p>`
  const parts = hunks.map((h) => {
    if (h.skipped) return html`<div class="fold muted">⋯ ${h.skipped} unchanged lines</div>`
    if (h.op === 'equal')
      return html`<pre class="d-eq">${h.lines.map((l) => `  ${l}`).join('\n')}</pre>`
    const cls = h.op === 'insert' ? 'd-ins' : 'd-del'
    const word = h.op === 'insert' ? 'added' : 'removed'
    const lines = h.lines.map((l) => `${MARK[h.op]} ${l}`)
    return html`<pre class="${cls}" aria-label="${lines.length} lines ${word}">${lines.join('\n')}</pre>`
  })
  return html`<div class="diff" role="region" aria-label="${label} diff" tabindex="0">${parts}</div>`
}

/** Letta's three parts, each change shown once; else content and core memory as they are. */
function hunksOf(d: {
  parts: DiffParts | null
  content: Hunk[] | null
  coreMemory: Hunk[] | null
}): Html {
  if (d.parts)
    return html`<h3>Template</h3>${diffView(d.parts.template, 'template')}
<h3>Memory</h3>${diffView(d.parts.memory, 'memory')}
<h3>Metadata</h3>${diffView(d.parts.metadata, 'metadata')}`
  return html`<h3>Content</h3>${diffView(d.content, 'content')}
<h3>Core memory</h3>${diffView(d.coreMemory, 'core memory')}`
}

/** The diff between two revisions of one prompt, as the API's diff endpoint answers it. */
export async function diffSection(
  input: PageInput,
  params: { did: string; rkey: string },
  sel: { from?: string; to?: string },
): Promise<Html> {
  const d = await input.read(READS.getPromptDiff, { ...params, from: sel.from, to: sel.to })
  const kind = anatomyLabel(d.changed, d.memoryFiles)
  return html`<section id="diff" aria-labelledby="diff-h" class="panel wide">
<h2 id="diff-h"><span class="kind">${kind === null ? 'Changes' : kind[0].toUpperCase() + kind.slice(1)}</span>, from <code>${d.from === null ? 'nothing' : d.from}</code> to <code>${d.to}</code></h2>
${d.note ? html`<p class="warn">${d.note}</p>` : ''}
${d.from === null ? html`<p class="muted">This is the first revision: everything is new.</p>` : ''}
${hunksOf(d)}
</section>`
}
