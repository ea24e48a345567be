import { FILTER_NAMES } from '../../model/flags.ts'
import { DEFAULT_SORT, LIST_SORTS, type ListSort } from '../../model/list-sort.ts'
import { READS } from '../catalog/reads.ts'
import type { PromptListItem } from '../prompt-views.ts'
import { getAgentNames, getHandles } from '../reads.ts'
import {
  agentLink,
  bytes,
  clipped,
  flagBadges,
  listHref,
  parseAtUri,
  promptHref,
  repoLink,
  str,
  time,
} from './components.ts'
import { type Html, html } from './html.ts'
import { layout } from './layout.ts'
import { pageLinks, parseTrail } from './page-params.ts'
import type { PageContext, PageInput } from './page-route.ts'
import { snippetView } from './snippet.ts'

// The prompt list and search: every filter lives in the query string, so a filtered page is
// a link to share, and the page reads what listPrompts and searchPrompts answer. Paging is
// the API's keyset cursor; `prev` carries the way back (page-params.ts).

export const LIST_PARAMS = ['q', 'flag', 'did', 'agent', 'sort', 'limit', 'cursor', 'prev'] as const

/** A list item or a search hit (with its snippet): one table shows both. */
export type PromptItem = PromptListItem & { snippet?: unknown }

/** The lists' order as the API gives it, said as it is: a TID key is its creation time. */
export const ORDER = 'by record key, descending (newest first where keys are TIDs)'

/** Each order of the API's `sort`: its name in the selector, and what a caption says of it. */
const SORTS: Record<ListSort, { option: string; caption: string }> = {
  created: { option: 'record key (created)', caption: ORDER },
  compiled: {
    option: 'newest compile',
    caption: 'newest compile first (by compiledAt; none or not a datetime last)',
  },
  indexed: {
    option: 'recently indexed',
    caption: 'most recently indexed first (when this index stored the current version)',
  },
  recompiles: { option: 'most recompiles', caption: 'most recompiles first' },
  size: { option: 'largest', caption: 'largest content first (no content last)' },
}

type Filters = Partial<Record<'q' | 'flag' | 'did' | 'agent' | 'sort' | 'limit', string>>

function sortSelect(current: string | undefined): Html {
  // The default's value is empty, as `flag`'s "any": a form sent as it came adds nothing.
  const option = (v: ListSort) => {
    const value = v === DEFAULT_SORT ? '' : v
    const on = (current ?? DEFAULT_SORT) === v ? html` selected` : ''
    return html`<option value="${value}"${on}>${SORTS[v].option}</option>`
  }
  return html`<div><label for="f-sort">Order</label><select id="f-sort" name="sort">${LIST_SORTS.map(option)}</select></div>`
}

function filterForm(f: Filters): Html {
  const option = (v: string, label: string) =>
    html`<option value="${v}"${f.flag === v ? html` selected` : ''}>${label}</option>`
  return html`<form class="filters" method="get" action="/prompts" aria-label="Filter prompts">
<div><label for="f-q">Text</label><input id="f-q" name="q" type="search" maxlength="1000" value="${f.q ?? ''}"></div>
<div><label for="f-flag">Flag</label><select id="f-flag" name="flag">${option('', 'any')}${FILTER_NAMES.map((n) => option(n, n))}</select></div>
<div><label for="f-did">Repo (DID or handle)</label><input id="f-did" name="did" value="${f.did ?? ''}" autocomplete="off"></div>
<div><label for="f-agent">Agent (at-uri)</label><input id="f-agent" name="agent" value="${f.agent ?? ''}" autocomplete="off"></div>
${sortSelect(f.sort)}
${f.limit ? html`<input type="hidden" name="limit" value="${f.limit}">` : ''}
<div class="actions"><button type="submit">Apply</button> <a href="/prompts">Clear</a></div>
</form>`
}

function row(p: PromptItem, ctx: PageContext, names: Names): Html {
  const rec = (p.record ?? {}) as Record<string, unknown>
  const snippet = p.snippet === undefined ? '' : snippetView(p.snippet)
  return html`<tr>
<td><a href="${promptHref(p.did, p.rkey)}"><code>${p.rkey}</code></a>${snippet}</td>
<td>${repoLink(p.did, names.handles)}</td>
<td>${flagBadges(p.flags)}</td>
<td class="agent">${agentLink(p.agent.uri, ctx.nsids, names.agents.get(p.agent.uri ?? ''))}</td>
<td>${time(str(rec.compiledAt))}</td>
<td class="num">${bytes(p.contentBytes)}</td>
</tr>`
}

/** What a table shows instead of identifiers: verified handles, and agents' names. */
export interface Names {
  handles: Map<string, string>
  agents: Map<string, string>
}

/** The agent records `items` name, by at-uri, parsed as agentLink parses them. */
function agentKeys(items: ReadonlyArray<Pick<PromptItem, 'agent'>>, ctx: PageContext) {
  const keys = new Map<string, { did: string; rkey: string }>()
  for (const { agent } of items) {
    const ref = parseAtUri(agent.uri)
    if (ref?.collection === ctx.nsids.agent) keys.set(agent.uri!, ref)
  }
  return keys
}

/** The handles and agent names of a page of prompts. */
export async function namesOf(
  items: ReadonlyArray<Pick<PromptItem, 'did' | 'agent'>>,
  ctx: PageContext,
): Promise<Names> {
  const [handles, agents] = await Promise.all([
    getHandles(
      ctx.db,
      items.map((p) => p.did),
    ),
    getAgentNames(ctx.db, agentKeys(items, ctx)),
  ])
  return { handles, agents }
}

export function promptTable(
  items: PromptItem[],
  ctx: PageContext,
  names: Names,
  caption: string,
): Html {
  if (items.length === 0) return html`<p class="empty">No prompts match.</p>`
  return html`<div class="scroll" tabindex="0" role="region" aria-label="${caption}"><table class="prompts">
<caption>${caption}</caption>
<thead><tr><th scope="col">prompt</th><th scope="col">repo</th><th scope="col">flags</th><th scope="col">agent</th><th scope="col">compiled</th><th scope="col" class="num">size</th></tr></thead>
<tbody>${items.map((p) => row(p, ctx, names))}</tbody></table></div>`
}

function pager(
  f: Filters,
  trail: string[],
  cursor: string | undefined,
  next: string | undefined,
): Html {
  const links = pageLinks(trail, cursor, next)
  const prev = links.previous
    ? html`<a rel="prev" id="page-prev" href="${listHref({ ...f, ...links.previous })}">← Previous</a>`
    : html`<span class="muted">← Previous</span>`
  const nxt = links.next
    ? html`<a rel="next" id="page-next" href="${listHref({ ...f, ...links.next })}">Next →</a>`
    : html`<span class="muted">Next →</span>`
  const first = cursor ? html`<a href="${listHref(f)}">First page</a>` : ''
  return html`<nav class="pager" aria-label="Pages">${prev} ${first} ${nxt}</nav>`
}

/** The agent a list is filtered on: by its name when a listed prompt's agent gives one. */
function agentName(uri: string, names: Names): string {
  const name = names.agents.get(uri)
  return name ? `“${clipped(name)}” (${uri})` : uri
}

export async function listPage(input: PageInput, ctx: PageContext): Promise<Html> {
  const { q, flag, did, agent, sort, limit, cursor } = input.query
  const trail = parseTrail(input.query.prev)
  const filters: Filters = { q, flag, did, agent, sort, limit }
  const query = { flag, did, agent, sort, limit: limit ?? '25', cursor }
  const answer: { items: PromptItem[]; cursor?: string } = q
    ? await input.read(READS.searchPrompts, { q, ...query })
    : await input.read(READS.listPrompts, query)
  const names = await namesOf(answer.items, ctx)
  const what = [
    q ? `matching “${q}”` : null,
    flag ? `flagged ${flag}` : null,
    did ? `in repo ${did}` : null,
    agent ? `of agent ${agentName(agent, names)}` : null,
  ].filter((x): x is string => x !== null)
  // The read refused any sort but the lexicon's, so this names the order the page is in.
  const order = SORTS[(sort ?? DEFAULT_SORT) as ListSort].caption
  const caption = `${what.length ? `Prompts ${what.join(', ')}` : 'All visible prompts'}, ${order}`
  return layout(
    { title: q ? `Search: ${q}` : 'Prompts', nav: 'prompts', q },
    html`<h1>${q ? 'Search prompts' : 'Prompts'}</h1>
${filterForm(filters)}
${promptTable(answer.items, ctx, names, caption)}
${pager(filters, trail, cursor, answer.cursor)}`,
  )
}
