import { readIngestActivity } from '../../db/read/ingest-activity.ts'
import { time } from './components.ts'
import { type Html, html } from './html.ts'
import type { PageContext } from './page-route.ts'

// The overview's notice while indexing is under way: a replay reading its file, or a
// source catching up from behind the present. Until it is done the counts are partial,
// and a person reading them should know. It is shown only while the cursor is written.

/** A cursor written this recently belongs to an ingest that is running. */
const ACTIVE_SECONDS = 15
/** Events further behind the present than this mean the ingest is catching up. */
const BEHIND_SECONDS = 120

function behind(seconds: number): string {
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`
  if (seconds < 172_800) return `${(seconds / 3600).toFixed(1)} h`
  return `${Math.round(seconds / 86_400)} days`
}

export async function ingestProgress(ctx: PageContext): Promise<Html> {
  const ingest = ctx.app.apiOptions.ingest
  const a = await readIngestActivity(ctx.db, ingest?.source ?? null, ingest?.key ?? null)
  if (!a || a.idleSeconds > ACTIVE_SECONDS) return html``
  if (a.source === 'replay')
    return html`<section class="panel wide progress" id="progress-panel" aria-label="Indexing progress"><p><strong>A replay is under way.</strong> Events of the recorded stream up to ${time(a.lastEventAt)} are indexed so far; the counts below grow as it reads on, and are complete once it reaches the end of its file.</p></section>`
  if (a.behindSeconds === null || a.behindSeconds < BEHIND_SECONDS) return html``
  return html`<section class="panel wide progress" id="progress-panel" aria-label="Indexing progress"><p><strong>Indexing is catching up</strong> with ${a.source}: events up to ${time(a.lastEventAt)} are indexed, ${behind(a.behindSeconds)} behind the present. The counts below are partial until it reaches the present.</p></section>`
}
