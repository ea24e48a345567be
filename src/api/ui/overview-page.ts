import { FILTER_NAMES, flagsToNames } from '../../model/flags.ts'
import { roleOf } from '../../model/nsids.ts'
import { READS } from '../catalog/reads.ts'
import { type ChangeRow, getHandles, recentChanges } from '../reads.ts'
import { readiness } from '../routes/health.ts'
import {
  agentHref,
  conversationHref,
  facts,
  flagBadges,
  listHref,
  promptHref,
  repoLink,
  time,
} from './components.ts'
import { type Html, html } from './html.ts'
import { layout } from './layout.ts'
import type { PageContext, PageInput } from './page-route.ts'
import { syncPanel } from './sync-panel.ts'

const RECENT = 20

type StatsAnswer = Awaited<ReturnType<typeof READS.getStats.run>>

function countsTable(stats: StatsAnswer): Html {
  const flags = stats.flags as Record<string, number>
  return html`<table class="counts">
<caption>Visible prompts by flag</caption>
<thead><tr><th scope="col">flag</th><th scope="col" class="num">prompts</th></tr></thead>
<tbody>
<tr><th scope="row"><a href="/prompts">all prompts</a></th><td class="num">${stats.prompts}</td></tr>
${FILTER_NAMES.map(
  (f) =>
    html`<tr><th scope="row"><a href="${listHref({ flag: f })}">${flagBadges(f === 'ok' ? [] : [f])}</a></th><td class="num">${flags[f] ?? 0}</td></tr>`,
)}
</tbody>
</table>`
}

function lag(seconds: number | null): string {
  if (seconds === null) return 'no event processed yet'
  if (seconds < 120) return `${seconds.toFixed(1)} s`
  if (seconds < 7200) return `${(seconds / 60).toFixed(1)} min`
  return `${(seconds / 3600).toFixed(1)} h`
}

function ingestPanel(stats: StatsAnswer, ready: { status: number; reason: string | null }): Html {
  const i = stats.ingest
  const healthy = ready.status === 200
  return html`<section aria-labelledby="ingest-h" class="panel">
<h2 id="ingest-h">Ingestion</h2>
<p class="health ${healthy ? 'good' : 'bad'}">${healthy ? 'Ready: migrations ran and the database answers' : `Not ready: ${ready.reason ?? 'unknown reason'}`}</p>
${facts([
  ['source', i.source ?? 'none in this process'],
  ['cursor', i.cursor === null ? 'none stored' : String(i.cursor)],
  ['lag', lag(i.lagSeconds)],
  ['newest event', time(i.lastEventAt)],
  ['conversations', String(stats.conversations)],
  ['agents', String(stats.agents)],
])}
</section>`
}

const PAGE_OF = { prompt: promptHref, conversation: conversationHref, agent: agentHref }

function changeTarget(c: ChangeRow, ctx: PageContext): Html {
  const label = html`<code>${c.rkey}</code>`
  if (c.op === 'delete') return label
  const role = roleOf(ctx.nsids, c.collection)
  return role ? html`<a href="${PAGE_OF[role](c.did, c.rkey)}">${label}</a>` : label
}

const shortCollection = (c: string): string => c.split('.').at(-1) ?? c

async function changesPanel(ctx: PageContext): Promise<Html> {
  const rows = await recentChanges(ctx.db, RECENT)
  const handles = await getHandles(
    ctx.db,
    rows.map((r) => r.did),
  )
  const body = rows.length
    ? html`<div class="scroll" tabindex="0" role="region" aria-label="Recent changes table"><table class="changes"><caption>Newest first</caption>
<thead><tr><th scope="col">seq</th><th scope="col">what</th><th scope="col">record</th><th scope="col">repo</th><th scope="col">flags</th><th scope="col">at</th></tr></thead>
<tbody>${rows.map(
        (c) =>
          html`<tr><td class="num">${c.seq}</td><td>${c.op} ${shortCollection(c.collection)}</td><td>${changeTarget(c, ctx)}</td><td>${repoLink(c.did, handles)}</td><td>${c.op !== 'delete' && c.collection === ctx.nsids.prompt ? flagBadges(flagsToNames(Number(c.flags ?? 0))) : ''}</td><td>${time(new Date(c.at).toISOString())}</td></tr>`,
      )}</tbody></table></div>`
    : html`<p class="muted">No changes yet.</p>`
  return html`<section aria-labelledby="changes-h" class="panel wide"><h2 id="changes-h">Recent changes</h2>${body}<p><a href="/v1/changes">the full change feed (NDJSON)</a></p></section>`
}

export async function overviewPage(input: PageInput, ctx: PageContext): Promise<Html> {
  // What /v1/stats and /readyz answer, read as those routes read it.
  const [stats, ready, changes, sync] = await Promise.all([
    input.read(READS.getStats, {}),
    readiness(ctx.app),
    changesPanel(ctx),
    syncPanel(input, ctx),
  ])
  return layout(
    { title: 'Overview', nav: 'overview' },
    html`<h1>Overview</h1>
<div class="grid">
<section aria-labelledby="counts-h" class="panel"><h2 id="counts-h">Prompt health</h2>${countsTable(stats)}</section>
${ingestPanel(stats, { status: ready.status, reason: ready.body.reason ?? null })}
${sync}
${changes}
</div>`,
  )
}
