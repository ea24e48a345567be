import { latestChangeSeq } from '../../db/read/changes.ts'
import { FILTER_NAMES } from '../../model/flags.ts'
import { READS } from '../catalog/reads.ts'
import { readiness } from '../routes/ops.ts'
import { facts, flagBadges, listHref, time } from './components.ts'
import { type Html, html } from './html.ts'
import { ingestProgress } from './ingest-progress.ts'
import { layout } from './layout.ts'
import type { PageContext, PageInput } from './page-route.ts'
import { changesPanel } from './recent-changes.ts'
import { syncPanel } from './sync-panel.ts'

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
  return html`<section aria-labelledby="ingest-h" class="panel" id="ingest-panel">
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

export async function overviewPage(input: PageInput, ctx: PageContext): Promise<Html> {
  // The change seq this page shows at least, read first: the live overview (assets/live.js)
  // subscribes after it, so a change committed while the page is read is not missed.
  const seq = await latestChangeSeq(ctx.db)
  // What /v1/stats and /readyz answer, read as those routes read it.
  const [progress, stats, ready, changes, sync] = await Promise.all([
    ingestProgress(ctx),
    input.read(READS.getStats, {}),
    readiness(ctx.app),
    changesPanel(ctx),
    syncPanel(input, ctx),
  ])
  return layout(
    { title: 'Overview', nav: 'overview', live: true },
    html`<h1>Overview</h1>
<p id="live-status" class="live-status" role="status">As of loading this page.</p>
<div class="grid" id="live" data-seq="${seq}">
${progress}
<section aria-labelledby="counts-h" class="panel" id="counts-panel"><h2 id="counts-h">Prompt health</h2>${countsTable(stats)}</section>
${ingestPanel(stats, { status: ready.status, reason: ready.body.reason ?? null })}
${sync}
${changes}
</div>`,
  )
}
