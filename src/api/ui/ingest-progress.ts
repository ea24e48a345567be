import { readBackfillActivity, readIngestActivity } from '../../db/read/ingest-activity.ts'
import type { BackfillCounts } from '../../model/backfill-counts.ts'
import { time } from './components.ts'
import { type Html, html } from './html.ts'
import type { PageContext } from './page-route.ts'

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
export async function ingestProgress(ctx: PageContext): Promise<Html> {
  const [source, backfill] = await Promise.all([
    sourceNotice(ctx),
    readBackfillActivity(ctx.db, ACTIVE_SECONDS),
  ])
  if (!source && !backfill) return html``
  return html`<section class="panel wide progress" id="progress-panel" aria-label="Indexing progress">${source ?? ''}${backfill ? backfillNotice(backfill) : ''}</section>`
}
