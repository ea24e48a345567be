import type { RepoView } from '../../db/repo-chain.ts'
import { FILTER_NAMES } from '../../model/flags.ts'
import { READS } from '../catalog/reads.ts'
import { notFound } from '../http-errors.ts'
import { type AgentSummary, getHandles } from '../reads.ts'
import { facts, flagBadges, jsonBlock, listHref, promptHref, repoLink, str } from './components.ts'
import { type Html, html } from './html.ts'
import { layout } from './layout.ts'
import { namesOf, promptTable } from './list-page.ts'
import { found, type PageContext, type PageInput } from './page-route.ts'

// Conversation, agent and repo pages. Each is one API lookup plus, for agents and repos,
// the first page of their prompts through the same list read the prompt list uses.

const FIRST_PAGE = '20'

export async function conversationPage(input: PageInput, ctx: PageContext): Promise<Html> {
  const { did, rkey } = input.params
  const c = await input.read(READS.getConversation, { did, rkey })
  const handles = await getHandles(ctx.db, [c.did])
  const prompt = c.prompt
    ? html`<a href="${promptHref(c.did, c.rkey)}">prompt ${c.rkey}</a> ${flagBadges(c.prompt.flags)}`
    : html`<span class="muted">no visible prompt in this slot</span>`
  const rec = (c.record ?? {}) as Record<string, unknown>
  return layout(
    { title: `Conversation ${c.rkey}` },
    html`<h1>Conversation <code>${c.rkey}</code></h1>
<section class="panel" aria-labelledby="conv-h"><h2 id="conv-h">Record</h2>
${facts([
  ['repo', repoLink(c.did, handles)],
  ['at-uri', html`<code class="uri">${c.uri}</code>`],
  ['cid', html`<code>${c.cid}</code>`],
  ['title', str(rec.title)],
  ['prompt', prompt],
])}
${jsonBlock(c.record, 'Record JSON')}</section>`,
  )
}

function healthTable(s: AgentSummary): Html {
  const counts = s.prompts as Record<string, number>
  return html`<table class="counts"><caption>Visible prompts naming this agent</caption>
<thead><tr><th scope="col">flag</th><th scope="col" class="num">prompts</th></tr></thead>
<tbody><tr><th scope="row"><a href="${listHref({ agent: s.uri })}">all</a></th><td class="num">${s.prompts.total}</td></tr>
${FILTER_NAMES.map(
  (f) =>
    html`<tr><th scope="row"><a href="${listHref({ agent: s.uri, flag: f })}">${flagBadges(f === 'ok' ? [] : [f])}</a></th><td class="num">${counts[f] ?? 0}</td></tr>`,
)}</tbody></table>`
}

export async function agentPage(input: PageInput, ctx: PageContext): Promise<Html> {
  const { did, rkey } = input.params
  const s = await input.read(READS.getAgent, { did, rkey })
  const [list, handles] = await Promise.all([
    input.read(READS.listPrompts, { agent: s.uri, limit: FIRST_PAGE }),
    getHandles(ctx.db, [did]),
  ])
  const names = await namesOf(list.items, ctx)
  const rec = (s.agent ?? null) as Record<string, unknown> | null
  const name = rec ? str(rec.name) : null
  const system = rec ? str(rec.system) : null
  return layout(
    { title: `Agent ${name ?? rkey}` },
    html`<h1>Agent ${name ? html`“${name}”` : html`<code>${rkey}</code>`}</h1>
<div class="grid">
<section class="panel" aria-labelledby="agent-h"><h2 id="agent-h">Record</h2>
${rec ? '' : html`<p class="warn">This agent record is not indexed; prompts name it.</p>`}
${facts([
  ['repo', repoLink(did, handles)],
  ['at-uri', html`<code class="uri">${s.uri}</code>`],
  ['name', name],
])}
${system !== null ? html`<details><summary>System template (${system.length} characters)</summary><pre class="text" tabindex="0">${system}</pre></details>` : ''}
${rec ? jsonBlock(rec, 'Record JSON') : ''}</section>
<section class="panel" aria-labelledby="health-h"><h2 id="health-h">Prompt health</h2>${healthTable(s)}</section>
</div>
<section aria-labelledby="agent-prompts-h"><h2 id="agent-prompts-h">Newest prompts of this agent</h2>
${promptTable(list.items, ctx, names, 'Prompts naming this agent')}
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
    ['prompts', repo?.records?.prompts === undefined ? null : String(repo.records.prompts)],
    [
      'conversations',
      repo?.records?.conversations === undefined ? null : String(repo.records.conversations),
    ],
    ['agents', repo?.records?.agents === undefined ? null : String(repo.records.agents)],
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
<section aria-labelledby="repo-prompts-h"><h2 id="repo-prompts-h">Newest prompts</h2>
${promptTable(list.items, ctx, names, 'Prompts of this repo')}
${list.cursor ? html`<p><a href="${listHref({ did: realDid })}">All prompts of this repo →</a></p>` : ''}</section>`,
  )
}
