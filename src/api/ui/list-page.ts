import { FILTER_NAMES } from '../../model/flags.ts'
import { DEFAULT_SORT, LIST_SORTS, type ListSort } from '../../model/list-sort.ts'
import { READS, type Snippet } from '../catalog/reads.ts'
import { badRequest } from '../http-errors.ts'
import { BASE64URL } from '../params.ts'
import type { PromptListItem } from '../prompt-views.ts'
import {
  agentLink,
  bytes,
  clipped,
  flagBadges,
  listHref,
  promptHref,
  repoLink,
  str,
  time,
} from './components.ts'
import { type Html, html } from './html.ts'
import { layout } from './layout.ts'
import { type Names, namesOf } from './names.ts'
import type { PageContext, PageInput } from './page-route.ts'

// The prompt list and search: every filter lives in the query string, so a filtered page is
// a link to share, and the page reads what listPrompts and searchPrompts answer. Paging is
// the API's keyset cursor; `prev` carries the way back.

export const LIST_PARAMS = ['q', 'flag', 'did', 'agent', 'sort', 'limit', 'cursor', 'prev'] as const

/** A list item or a search hit (with its snippet): one table shows both. */
type PromptItem = PromptListItem & { snippet?: Snippet }

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

/** A search hit's text with its matches marked (offsets checked against the text). */
function snippetView(s: Snippet): Html {
  const parts: Html[] = []
  let at = 0
  for (const m of s.matches) {
    if (m.start < at || m.end > s.text.length) continue
    parts.push(html`${s.text.slice(at, m.start)}<mark>${s.text.slice(m.start, m.end)}</mark>`)
    at = m.end
  }
  parts.push(html`${s.text.slice(at)}`)
  return html`<p class="snippet">${parts}</p>`
}

// Keyset pages only go forward, so the way back travels in the link: `prev` is a bounded
// stack of earlier cursors (FIRST for the first page), newest last.
const FIRST = '~'
const MAX_TRAIL = 25

function parseTrail(value: string | undefined): string[] {
  if (value === undefined) return []
  const steps = value.split('.')
  if (steps.length > MAX_TRAIL || !steps.every((s) => s === FIRST || BASE64URL.test(s)))
    throw badRequest('prev is malformed: use the Previous and Next links as they are')
  return steps
}

/** Links to the next page (if any) and to the previous one (unless this is the first). */
function pager(
  f: Filters,
  trail: string[],
  cursor: string | undefined,
  nextCursor: string | undefined,
): Html {
  const before = trail.at(-1)
  const rest = trail.slice(0, -1)
  const previous = cursor !== undefined && {
    cursor: before === undefined || before === FIRST ? undefined : before,
    prev: rest.length ? rest.join('.') : undefined,
  }
  const prev = previous
    ? html`<a rel="prev" id="page-prev" href="${listHref({ ...f, ...previous })}">← Previous</a>`
    : html`<span class="muted">← Previous</span>`
  const next = nextCursor && {
    cursor: nextCursor,
    prev: [...trail, cursor ?? FIRST].slice(-MAX_TRAIL).join('.'),
  }
  const nxt = next
    ? html`<a rel="next" id="page-next" href="${listHref({ ...f, ...next })}">Next →</a>`
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
