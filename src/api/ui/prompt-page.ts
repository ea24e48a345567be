import { type PromptAnswer, READS } from '../catalog/reads.ts'
import type { RevisionView } from '../revision-reads.ts'
import {
  agentLink,
  clipped,
  conversationHref,
  facts,
  flagBadges,
  jsonBlock,
  parseAtUri,
  promptHref,
  repoLink,
  seg,
  str,
  time,
} from './components.ts'
import { anatomyLabel, diffSection } from './diff-section.ts'
import { type Html, html } from './html.ts'
import { layout } from './layout.ts'
import { type Names, namesOf } from './names.ts'
import { found, type PageContext, type PageInput } from './page-route.ts'

export const PROMPT_PARAMS = ['from', 'to', 'revcursor'] as const

function flagsPanel(p: PromptAnswer): Html {
  if (p.flags.length === 0)
    return html`<p class="health good">No flags: the sidecar matches its conversation, agent and newest compile.</p>`
  // flag-reasons.ts has a sentence for every flag a prompt carries.
  const reasons: Record<string, string> = p.reasons
  return html`<ul class="reasons">${p.flags.map((f) => html`<li>${flagBadges([f])} ${reasons[f]}</li>`)}</ul>`
}

function provenance(p: PromptAnswer): Html {
  const v = p.provenance
  const verified = v.verified ? 'verified commit' : 'not verified'
  return html`${v.source ?? 'unknown source'}, ${verified}${v.commit ? html`, commit <code>${v.commit}</code>` : ''}`
}

/** The agent and conversation records a prompt's facts describe, when this index shows them. */
interface Linked {
  agent: Record<string, unknown> | null
  conversation: Record<string, unknown> | null
}

const asRecord = (v: unknown): Record<string, unknown> | null =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null

async function linkedRecords(p: PromptAnswer, input: PageInput, ctx: PageContext): Promise<Linked> {
  const ref = parseAtUri(p.agent.uri)
  const [agent, conversation] = await Promise.all([
    p.agent.exists && ref?.collection === ctx.nsids.agent
      ? found(input.read(READS.getAgent, { did: ref.did, rkey: ref.rkey }))
      : null,
    p.conversation.exists
      ? found(input.read(READS.getConversation, { did: p.did, rkey: p.rkey }))
      : null,
  ])
  return { agent: asRecord(agent?.agent), conversation: asRecord(conversation?.record) }
}

/** The conversation in the prompt's slot: exists, hidden (Letta's `hidden: true`) or missing. */
function conversationState(p: PromptAnswer, rec: Record<string, unknown> | null): Html {
  if (!p.conversation.exists)
    return html`<span class="warn">missing: no conversation record in this slot</span>`
  const link = html`<a href="${conversationHref(p.did, p.rkey)}">conversation ${p.rkey}</a>`
  return rec?.hidden === true
    ? html`${link} <span class="warn">hidden (its record says hidden: true)</span>`
    : html`${link} <span class="muted">exists</span>`
}

function agentFact(p: PromptAnswer, ctx: PageContext, names: Names, rec: Linked['agent']): Html {
  const link = agentLink(p.agent.uri, ctx.nsids, names.agents.get(p.agent.uri ?? ''))
  if (!p.agent.exists) return html`${link} <span class="muted">(not indexed)</span>`
  if (!rec) return link
  const model = str(rec.model)
  return model === null
    ? html`${link} <span class="muted">(no model given)</span>`
    : html`${link} <span class="model">model <code>${clipped(model)}</code></span>`
}

const code = (v: unknown): Html | null => (str(v) ? html`<code>${str(v)}</code>` : null)

function factsPanel(p: PromptAnswer, ctx: PageContext, names: Names, linked: Linked): Html {
  const rec = (p.record ?? {}) as Record<string, unknown>
  return facts([
    ['repo', repoLink(p.did, names.handles)],
    ['at-uri', html`<code class="uri">${p.uri}</code>`],
    ['cid', html`<code>${p.cid}</code>`],
    ['rev', html`<code>${p.rev}</code>`],
    ['conversation', conversationState(p, linked.conversation)],
    ['agent', agentFact(p, ctx, names, linked.agent)],
    ['compiled at', time(str(rec.compiledAt))],
    ['recompiles', String(p.recompiles)],
    ['last recompile', anatomyLabel(p.changed, null)],
    ['indexed at', time(p.indexedAt)],
    ['raw system hash', code(rec.rawSystemHash)],
    ['memfs revision', code(rec.memfsRevision)],
    ['validation', p.validationError],
    ['provenance', provenance(p)],
  ])
}

function revisionsForm(
  p: PromptAnswer,
  revs: RevisionView[],
  sel: { from?: string; to?: string },
): Html {
  if (revs.length === 0) return html`<p class="muted">No revisions recorded.</p>`
  const from = sel.from ?? revs[1]?.rev
  const to = sel.to ?? revs[0]?.rev
  const radio = (name: 'from' | 'to', rev: string, checked: boolean, n: number) =>
    html`<input type="radio" name="${name}" value="${rev}" id="${name}-${n}" aria-label="${name} revision ${rev}"${checked ? html` checked` : ''}>`
  return html`<form method="get" action="${promptHref(p.did, p.rkey)}#diff" class="revisions">
<div class="scroll" tabindex="0" role="region" aria-label="Revision history"><table>
<caption>Revision history, newest first: pick two and compare</caption>
<thead><tr><th scope="col">from</th><th scope="col">to</th><th scope="col">rev</th><th scope="col">cid</th><th scope="col">compiled</th><th scope="col">memfs</th><th scope="col">changed</th><th scope="col">seen</th><th scope="col">diff</th></tr></thead>
<tbody>${revs.map(
    (r, n) =>
      html`<tr><td>${radio('from', r.rev, r.rev === from, n)}</td><td>${radio('to', r.rev, r.rev === to, n)}</td><td><code>${r.rev}</code></td><td><code class="cid">${r.cid}</code></td><td>${time(r.compiledAt)}</td><td>${r.memfsRevision ?? ''}</td><td class="kind">${anatomyLabel(r.changed, r.memoryFiles) ?? ''}</td><td>${time(r.seenAt)}</td><td><a href="${promptHref(p.did, p.rkey)}?to=${seg(r.rev)}#diff" aria-label="what changed in revision ${r.rev}">what changed</a></td></tr>`,
  )}</tbody></table></div>
${revs.length > 1 ? html`<button type="submit" id="compare">Compare revisions</button>` : ''}
</form>`
}

/** The text with its core memory marked, one text node per part (a 200 kB prompt, one <pre>). */
function contentView(content: string | null, coreMemory: string | null): Html {
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

export async function promptPage(input: PageInput, ctx: PageContext): Promise<Html> {
  const params = { did: input.params.did, rkey: input.params.rkey }
  const { answer, recordJson } = await input.read(READS.getPrompt, params)
  const p: PromptAnswer = { ...answer, record: JSON.parse(recordJson) }
  const { from, to, revcursor } = input.query
  const [revs, names, diff, linked] = await Promise.all([
    found(input.read(READS.getPromptRevisions, { ...params, limit: '100', cursor: revcursor })),
    namesOf([p], ctx),
    from || to ? diffSection(input, params, { from, to }) : Promise.resolve(null),
    linkedRecords(p, input, ctx),
  ])
  const rec = (p.record ?? {}) as Record<string, unknown>
  const { content: _c, coreMemory: _m, ...rest } = rec
  const more = revs?.cursor
    ? html`<p><a href="${promptHref(p.did, p.rkey)}?revcursor=${seg(revs.cursor)}">Older revisions →</a></p>`
    : ''
  return layout(
    { title: `Prompt ${p.rkey}` },
    html`<h1>Prompt <code>${p.rkey}</code></h1>
<p class="sub">${repoLink(p.did, names.handles)} · ${flagBadges(p.flags)}</p>
<div class="grid">
<section aria-labelledby="flags-h" class="panel"><h2 id="flags-h">Flags</h2>${flagsPanel(p)}</section>
<section aria-labelledby="facts-h" class="panel"><h2 id="facts-h">Record</h2>${factsPanel(p, ctx, names, linked)}${jsonBlock(rest, 'Other record fields (JSON)')}</section>
</div>
${diff ?? ''}
<section aria-labelledby="revs-h"><h2 id="revs-h">Revisions</h2>${revisionsForm(p, revs?.items ?? [], { from, to })}${more}</section>
<section aria-labelledby="content-h"><h2 id="content-h">Content</h2>${contentView(str(rec.content), str(rec.coreMemory))}</section>`,
  )
}
