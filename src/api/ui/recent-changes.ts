import { type ChangeRow, readRecentChanges } from '../../db/read/changes.ts'
import { readConversationTitles } from '../../db/read/records.ts'
import { flagsToNames } from '../../model/flags.ts'
import { roleOf } from '../../model/nsids.ts'
import {
  agentHref,
  clipped,
  conversationHref,
  flagBadges,
  promptHref,
  repoLink,
  time,
} from './components.ts'
import { type Html, html } from './html.ts'
import { getAgentNames, getHandles } from './names.ts'
import type { PageContext } from './page-route.ts'

// The overview's recent changes, newest first by seq: agents by their name and
// conversations by their title (the record key in the title), repos by handle with the DID.

const RECENT = 20
const PAGE_OF = { prompt: promptHref, conversation: conversationHref, agent: agentHref }

interface ChangeNames {
  handles: Map<string, string>
  /** `collection did rkey` of an agent or conversation change to the name its record gives. */
  records: Map<string, string>
}

async function namesOf(rows: ChangeRow[], ctx: PageContext): Promise<ChangeNames> {
  const of = (nsid: string) =>
    rows.filter((r) => r.collection === nsid).map((r) => ({ did: r.did, rkey: r.rkey }))
  const agents = new Map(of(ctx.nsids.agent).map((k) => [`${k.did} ${k.rkey}`, k]))
  const [handles, agentNames, titles] = await Promise.all([
    getHandles(
      ctx.db,
      rows.map((r) => r.did),
    ),
    getAgentNames(ctx.db, agents),
    readConversationTitles(ctx.db, of(ctx.nsids.conversation)),
  ])
  // A prompt shares its record key with its conversation: names are kept per collection.
  const records = new Map<string, string>()
  for (const [k, title] of titles) records.set(`${ctx.nsids.conversation} ${k}`, title)
  for (const [k, name] of agentNames) records.set(`${ctx.nsids.agent} ${k}`, name)
  return { handles, records }
}

function target(c: ChangeRow, ctx: PageContext, names: ChangeNames): Html {
  const name = names.records.get(`${c.collection} ${c.did} ${c.rkey}`)?.trim()
  const label = name
    ? html`<span class="record-name" title="record key ${c.rkey}">${clipped(name)}</span>`
    : html`<code>${c.rkey}</code>`
  if (c.op === 'delete') return label
  const role = roleOf(ctx.nsids, c.collection)
  return role ? html`<a href="${PAGE_OF[role](c.did, c.rkey)}">${label}</a>` : label
}

function row(c: ChangeRow, ctx: PageContext, names: ChangeNames): Html {
  const flags =
    c.op !== 'delete' && c.collection === ctx.nsids.prompt
      ? flagBadges(flagsToNames(Number(c.flags ?? 0)))
      : ''
  const at = new Date(c.at).toISOString()
  return html`<tr><td class="num">${c.seq}</td><td>${c.op} ${c.collection.split('.').at(-1)}</td><td>${target(c, ctx, names)}</td><td>${repoLink(c.did, names.handles)}</td><td>${flags}</td><td>${time(at)}</td></tr>`
}

export async function changesPanel(ctx: PageContext): Promise<Html> {
  // The newest visible changes: withheld rows dropped, so maybe fewer.
  const rows = (await readRecentChanges(ctx.db, RECENT)).filter((r) => !r.withheld)
  const names = await namesOf(rows, ctx)
  const body = rows.length
    ? html`<div class="scroll" tabindex="0" role="region" aria-label="Recent changes table"><table class="changes"><caption>Newest first (by change sequence number)</caption>
<thead><tr><th scope="col">seq</th><th scope="col">what</th><th scope="col">record</th><th scope="col">repo</th><th scope="col">flags</th><th scope="col">at</th></tr></thead>
<tbody>${rows.map((c) => row(c, ctx, names))}</tbody></table></div>`
    : html`<p class="muted">No changes yet.</p>`
  return html`<section aria-labelledby="changes-h" class="panel wide" id="changes-panel"><h2 id="changes-h">Recent changes</h2>${body}<p><a href="/v1/changes">the full change feed (NDJSON)</a></p></section>`
}
