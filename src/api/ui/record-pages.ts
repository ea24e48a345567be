import { type AgentCurrency, readAgentCurrency } from '../../db/read/records.ts'
import type { RepoView } from '../../db/repo-chain.ts'
import { READS } from '../catalog/reads.ts'
import { notFound } from '../http-errors.ts'
import {
  agentLink,
  clipped,
  facts,
  flagBadges,
  flagCounts,
  jsonBlock,
  listHref,
  parseAtUri,
  promptHref,
  repoLink,
  str,
} from './components.ts'
import { type Html, html, type Slot } from './html.ts'
import { layout } from './layout.ts'
import { ORDER, promptTable } from './list-page.ts'
import { getAgentNames, getHandles, namesOf } from './names.ts'
import { found, type PageContext, type PageInput } from './page-route.ts'

// Conversation, agent and repo pages: one API lookup each, plus the first page of prompts
// through the list's read; the agent page also counts its repo's current prompts
// (readAgentCurrency), a count in no API answer.

const FIRST_PAGE = '20'

/** A record's string `tags` (Letta's list; anything else is ignored), or null without a list. */
function tagsOf(rec: Record<string, unknown>): string[] | null {
  return Array.isArray(rec.tags) ? rec.tags.filter((t): t is string => typeof t === 'string') : null
}

function tagList(tags: string[]): Html {
  if (tags.length === 0) return html`<span class="muted">none</span>`
  return html`${tags.slice(0, 50).map((t) => html`<code class="tag">${clipped(t)}</code> `)}`
}

/** A short string field as code, clipped; null when the field is not a string. */
function codeOf(v: unknown): Html | null {
  const s = str(v)
  return s === null ? null : html`<code>${clipped(s)}</code>`
}

/** What a Letta conversation record says of itself: its agent, whether hidden, its messages. */
function lettaConversationFacts(
  rec: Record<string, unknown>,
  ctx: PageContext,
  agentName: string | undefined,
): Array<[string, Slot]> {
  const messages = rec.in_context_message_ids
  const tags = tagsOf(rec)
  const agent = str(rec.agent)
  const hidden = html`<span class="warn">yes (its record says hidden: true)</span>`
  return [
    ['agent', agent === null ? null : agentLink(agent, ctx.nsids, agentName)],
    ['hidden', rec.hidden === true ? hidden : null],
    ['messages in context', Array.isArray(messages) ? String(messages.length) : null],
    ['tags', tags?.length ? tagList(tags) : null],
    ['Letta id', codeOf(rec.id)],
  ]
}

export async function conversationPage(input: PageInput, ctx: PageContext): Promise<Html> {
  const { did, rkey } = input.params
  const c = await input.read(READS.getConversation, { did, rkey })
  const rec = (c.record ?? {}) as Record<string, unknown>
  const agent = str(rec.agent)
  const ref = parseAtUri(agent)
  const [handles, agentNames] = await Promise.all([
    getHandles(ctx.db, [c.did]),
    agent && ref?.collection === ctx.nsids.agent
      ? getAgentNames(ctx.db, new Map([[agent, ref]]))
      : new Map<string, string>(),
  ])
  const prompt = c.prompt
    ? html`<a href="${promptHref(c.did, c.rkey)}">prompt ${c.rkey}</a> ${flagBadges(c.prompt.flags)}`
    : html`<span class="muted">no visible prompt in this slot</span>`
  const title = str(rec.title)
  return layout(
    { title: `Conversation ${c.rkey}` },
    html`<h1>Conversation <code>${c.rkey}</code></h1>
<section class="panel" aria-labelledby="conv-h"><h2 id="conv-h">Record</h2>
${facts([
  ['repo', repoLink(c.did, handles)],
  ['at-uri', html`<code class="uri">${c.uri}</code>`],
  ['cid', html`<code>${c.cid}</code>`],
  ['title', title === null ? null : clipped(title, 1000)],
  ...lettaConversationFacts(rec, ctx, agentNames.get(agent ?? '')),
  ['prompt', prompt],
])}
${jsonBlock(c.record, 'Record JSON')}</section>`,
  )
}

/** The stored hash of the agent's `system`, or why there is none. */
function templateHash(rec: Record<string, unknown>, hash: string | null): Html {
  if (hash) return html`<code class="hash">${hash}</code>`
  const why = rec.system === undefined ? 'the record has no system' : 'system is not a string'
  return html`<span class="muted">no template hash (${why})</span>`
}

/** Of this repo's prompts naming the agent, how many carry neither stale flag, with the lists. */
function currency(did: string, uri: string, c: AgentCurrency): Html {
  const list = (flag?: string) => listHref({ did, agent: uri, flag })
  const stale = (['staleTemplate', 'staleMemory'] as const)
    .filter((f) => c.flags[f] > 0)
    .map((f) => html`; <a href="${list(f)}">${c.flags[f]} ${f}</a>`)
  return html`<span id="agent-current"><a href="${list()}">${c.current} of ${c.total} prompts current</a></span> <span class="muted">(in this repo; current: neither staleTemplate nor staleMemory)</span>${stale}`
}

function lettaFacts(rec: Record<string, unknown>, c: AgentCurrency, uri: string, did: string) {
  const name = str(rec.name)
  const description = str(rec.description)
  const tags = tagsOf(rec)
  const long = name !== null && clipped(name) !== name
  const whole = html` <span class="muted">(${name?.length} characters; whole in the record JSON)</span>`
  return [
    ['name', name === null ? null : html`${clipped(name)}${long ? whole : ''}`],
    ['description', description === null ? null : clipped(description, 1000)],
    ['model', codeOf(rec.model)],
    ['tags', tags === null ? null : tagList(tags)],
    ['Letta id', codeOf(rec.id)],
    ['template hash', templateHash(rec, c.templateHash)],
    ['prompts', currency(did, uri, c)],
  ] satisfies Array<[string, Slot]>
}

export async function agentPage(input: PageInput, ctx: PageContext): Promise<Html> {
  const { did, rkey } = input.params
  const s = await input.read(READS.getAgent, { did, rkey })
  const [list, handles, c] = await Promise.all([
    input.read(READS.listPrompts, { agent: s.uri, limit: FIRST_PAGE }),
    getHandles(ctx.db, [did]),
    readAgentCurrency(ctx.db, did, rkey),
  ])
  const names = await namesOf(list.items, ctx)
  const rec = (s.agent ?? null) as Record<string, unknown> | null
  const name = rec ? str(rec.name) : null
  const system = rec ? str(rec.system) : null
  return layout(
    { title: `Agent ${name ? clipped(name) : rkey}` },
    html`<h1>Agent ${name ? html`“${clipped(name)}”` : html`<code>${rkey}</code>`}</h1>
<div class="grid">
<section class="panel" aria-labelledby="agent-h"><h2 id="agent-h">Record</h2>
${rec ? '' : html`<p class="warn">This agent record is not indexed; prompts name it.</p>`}
${facts([
  ['repo', repoLink(did, handles)],
  ['at-uri', html`<code class="uri">${s.uri}</code>`],
  ...(rec ? lettaFacts(rec, c, s.uri, did) : []),
])}
${system !== null ? html`<details><summary>System template (${system.length} characters)</summary><pre class="text" tabindex="0">${system}</pre></details>` : ''}
${rec ? jsonBlock(rec, 'Record JSON') : ''}</section>
<section class="panel" aria-labelledby="health-h"><h2 id="health-h">Prompt health</h2>${flagCounts('Visible prompts naming this agent, in any repo', 'all', s.prompts, { agent: s.uri })}</section>
</div>
<section aria-labelledby="agent-prompts-h"><h2 id="agent-prompts-h">Prompts of this agent</h2>
${promptTable(list.items, ctx, names, `Prompts naming this agent, ${ORDER}`)}
${list.cursor ? html`<p><a href="${listHref({ agent: s.uri })}">All prompts of this agent →</a></p>` : ''}</section>`,
  )
}

function accountText(a: RepoView['account']): Html {
  const state = a.active === false ? `inactive (${a.status ?? 'no status'})` : 'active'
  return a.hidden
    ? html`<span class="warn">${state}; hidden: its records are withheld from every answer</span>`
    : html`${state}`
}

function repoFacts(did: string, handle: string | undefined, repo: RepoView | null): Html {
  return facts([
    ['DID', html`<code>${did}</code>`],
    ['handle', handle ? `@${handle}` : html`<span class="muted">none verified and visible</span>`],
    ['account', repo?.account ? accountText(repo.account) : null],
    [
      'sync',
      repo?.sync?.state
        ? `${repo.sync.state}${repo.sync.reason ? ` (${repo.sync.reason})` : ''}`
        : null,
    ],
    ['last rev', repo?.sync?.rev ?? null],
    ...(['prompts', 'conversations', 'agents'] as const).map((k): [string, Slot] => [
      k,
      repo?.records?.[k] === undefined ? null : String(repo.records[k]),
    ]),
  ])
}

export async function repoPage(input: PageInput, ctx: PageContext): Promise<Html> {
  const { did } = input.params
  // The list read checks the DID or handle and resolves handles; an empty page means
  // the index has nothing visible from this repo.
  const [list, repo] = await Promise.all([
    input.read(READS.listPrompts, { did, limit: FIRST_PAGE }),
    found(input.read(READS.getRepo, { did })),
  ])
  const realDid = repo?.did ?? list.items[0]?.did ?? did
  const [handles, names] = await Promise.all([
    getHandles(ctx.db, [realDid]),
    namesOf(list.items, ctx),
  ])
  if (list.items.length === 0 && !repo && !handles.has(realDid))
    throw notFound(`this index has no visible records of repo ${did}`)
  return layout(
    { title: `Repo ${handles.get(realDid) ?? realDid}` },
    html`<h1>Repo ${handles.get(realDid) ? `@${handles.get(realDid)}` : html`<code>${realDid}</code>`}</h1>
<section class="panel" aria-labelledby="repo-h"><h2 id="repo-h">Account</h2>${repoFacts(realDid, handles.get(realDid), repo)}</section>
<section aria-labelledby="repo-prompts-h"><h2 id="repo-prompts-h">Prompts</h2>
${promptTable(list.items, ctx, names, `Prompts of this repo, ${ORDER}`)}
${list.cursor ? html`<p><a href="${listHref({ did: realDid })}">All prompts of this repo →</a></p>` : ''}</section>`,
  )
}
