import { latestChangeSeq } from '../../db/read/changes.ts'
import { readBackfillActivity, readIngestActivity } from '../../db/read/ingest-activity.ts'
import { readVisibleSyncStates } from '../../db/read/sync-states.ts'
import type { RepoView } from '../../db/repo-chain.ts'
import type { BackfillCounts } from '../../model/backfill-counts.ts'
import { READS } from '../catalog/reads.ts'
import { readiness } from '../routes/ops.ts'
import { facts, flagCounts, repoLink, time } from './components.ts'
import { type Html, html } from './html.ts'
import { layout } from './layout.ts'
import { getHandles } from './names.ts'
import { found, type PageContext, type PageInput } from './page-route.ts'
import { changesPanel } from './recent-changes.ts'

type StatsAnswer = Awaited<ReturnType<typeof READS.getStats.run>>

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

// The overview's notice while indexing is under way (a replay, a catch-up, or a backfill,
// maybe in another process), so a person knows the counts are partial. It shows only while
// the cursor or the backfill's run is being written.

/** A cursor or backfill run written this recently belongs to an ingest that is running. */
const ACTIVE_SECONDS = 15
/** Events further behind the present than this mean the ingest is catching up. */
const BEHIND_SECONDS = 120

function behind(seconds: number): string {
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`
  if (seconds < 172_800) return `${(seconds / 3600).toFixed(1)} h`
  return `${Math.round(seconds / 86_400)} days`
}

function backfillNotice(b: BackfillCounts): Html {
  const total = b.listingDone ? String(b.listed) : `${b.listed}+`
  return html`<p><strong>A backfill is under way:</strong> ${b.done} of ${total} repos (${b.skipped} skipped, ${b.failed} failed), ${b.records} records so far. The counts below grow as it fetches repos.</p>`
}

async function sourceNotice(ctx: PageContext): Promise<Html | null> {
  const ingest = ctx.app.apiOptions.ingest
  const a = await readIngestActivity(ctx.db, ingest?.source ?? null, ingest?.key ?? null)
  if (!a || a.idleSeconds > ACTIVE_SECONDS) return null
  if (a.source === 'replay')
    return html`<p><strong>A replay is under way.</strong> Events of the recorded stream up to ${time(a.lastEventAt)} are indexed so far; the counts below grow as it reads on, and are complete once it reaches the end of its file.</p>`
  if (a.behindSeconds === null || a.behindSeconds < BEHIND_SECONDS) return null
  return html`<p><strong>Indexing is catching up</strong> with ${a.source}: events up to ${time(a.lastEventAt)} are indexed, ${behind(a.behindSeconds)} behind the present. The counts below are partial until it reaches the present.</p>`
}

/** One panel for every ingest under way; live.js polls while it shows. */
async function ingestProgress(ctx: PageContext): Promise<Html> {
  const [source, backfill] = await Promise.all([
    sourceNotice(ctx),
    readBackfillActivity(ctx.db, ACTIVE_SECONDS),
  ])
  if (!source && !backfill) return html``
  return html`<section class="panel wide progress" id="progress-panel" aria-label="Indexing progress">${source ?? ''}${backfill ? backfillNotice(backfill) : ''}</section>`
}

// The overview's sync card (Sync 1.1): visible repos by state, in plain words, and the ones
// waiting longest. Only a repo known to be out of sync is a warning: one no chain check has
// read is normal for Jetstream and replays.

const SHOWN = 10

const MEANING: Record<string, { label: string; means: string }> = {
  synchronized: {
    label: 'in sync',
    means: 'its commit chain was checked and nothing is missing',
  },
  desynchronized: {
    label: 'out of sync',
    means:
      'a break in its commit chain was seen; its records may be missing changes until it is re-fetched',
  },
  resyncing: { label: 'being re-fetched', means: 'a resync of the whole repo is under way' },
  unknown: {
    label: 'not checked',
    means:
      'its records came through Jetstream or a replay, which carry no commit chain to check; normal for those sources, and it gets a state once the firehose or a backfill reads it',
  },
}

function statesList(counts: Record<string, number>): Html {
  const states = Object.keys(MEANING).filter((s) => counts[s])
  if (states.length === 0) return html`<p class="muted">No repos tracked yet.</p>`
  return html`<ul class="sync-states">${states.map(
    (s) =>
      html`<li data-state="${s}"><strong>${MEANING[s].label}</strong>: ${counts[s]} ${counts[s] === 1 ? 'repo' : 'repos'} <span class="muted">(${MEANING[s].means})</span></li>`,
  )}</ul>`
}

function headline(counts: Record<string, number>): Html {
  const out = (counts.desynchronized ?? 0) + (counts.resyncing ?? 0)
  if (out > 0)
    return html`<p class="warn" id="sync-summary">${out} visible ${out === 1 ? 'repo is' : 'repos are'} out of sync or being re-fetched.</p>`
  if (counts.unknown)
    return html`<p class="health good" id="sync-summary">No visible repo is known to be out of sync.</p>`
  return html`<p class="health good" id="sync-summary">Every visible repo is in sync.</p>`
}

async function syncPanel(input: PageInput, ctx: PageContext): Promise<Html> {
  const { counts, dids } = await readVisibleSyncStates(ctx.db, SHOWN)
  const [looked, handles] = await Promise.all([
    Promise.all(dids.map((did) => found(input.read(READS.getRepo, { did })))),
    getHandles(ctx.db, dids),
  ])
  const repos = looked.filter((r): r is RepoView => r !== null && !r.account.hidden)
  const list = repos.length
    ? html`<h3>Waiting longest</h3><ul class="out-of-sync">${repos.map(
        (r) =>
          html`<li>${repoLink(r.did, handles)} ${MEANING[r.sync.state ?? 'unknown']?.label ?? r.sync.state ?? ''}${r.sync.reason ? ` (${r.sync.reason})` : ''} since ${time(r.sync.since)}</li>`,
      )}</ul>`
    : ''
  return html`<section aria-labelledby="sync-h" class="panel" id="sync-panel"><h2 id="sync-h">Repo sync</h2>${headline(counts)}${statesList(counts)}${list}</section>`
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
<section aria-labelledby="counts-h" class="panel" id="counts-panel"><h2 id="counts-h">Prompt health</h2>${flagCounts('Visible prompts by flag', 'all prompts', { ...stats.flags, total: stats.prompts })}</section>
${ingestPanel(stats, { status: ready.status, reason: ready.body.reason ?? null })}
${sync}
${changes}
</div>`,
  )
}
