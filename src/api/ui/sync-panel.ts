import type { RepoView } from '../../db/repo-chain.ts'
import { READS } from '../catalog/reads.ts'
import { reposOutOfSync } from '../reads.ts'
import { repoHref, time } from './components.ts'
import { type Html, html } from './html.ts'
import { found, type PageContext, type PageInput } from './page-route.ts'

// "Repos out of sync" on the overview (Sync 1.1): the counts by sync state, and the repos
// waiting longest, each read as /v1/repos reads it so a hidden repo is left out as the API
// marks it.

const SHOWN = 10

export async function syncPanel(input: PageInput, ctx: PageContext): Promise<Html> {
  const { counts, dids } = await reposOutOfSync(ctx.db, SHOWN)
  const repos = (
    await Promise.all(dids.map((did) => found(input.read(READS.getRepo, { did }))))
  ).filter((r): r is RepoView => r !== null && !r.account.hidden)
  const states = ['synchronized', 'desynchronized', 'resyncing', 'unknown'].filter((s) => counts[s])
  const label = (s: string) => (s === 'unknown' ? 'no sync state' : s)
  const summary = states.length
    ? html`<p>${states.map((s, i) => html`${i ? ' · ' : ''}${label(s)}: <strong>${counts[s] ?? 0}</strong>`)}</p>`
    : html`<p class="muted">No tracked repos yet.</p>`
  const unknown = counts.unknown ?? 0
  // "In sync" is claimed only of repos whose chain was checked: a repo without a sync state
  // may be in sync or not, nobody here has looked.
  const none = unknown
    ? html`<p class="muted" id="sync-unknown">None is known to be out of sync. ${unknown} ${unknown === 1 ? 'repo has' : 'repos have'} no sync state: ${unknown === 1 ? 'its records' : 'their records'} came through Jetstream or a replay, which carry no commit chain to check; a repo gets a state once the firehose or a backfill has read it (Sync 1.1).</p>`
    : html`<p class="health good">Every visible repo is in sync.</p>`
  const list = repos.length
    ? html`<ul class="out-of-sync">${repos.map(
        (r) =>
          html`<li><a href="${repoHref(r.did)}"><code>${r.did}</code></a> ${r.sync.state ?? ''}${r.sync.reason ? ` (${r.sync.reason})` : ''} since ${time(r.sync.since)}</li>`,
      )}</ul>`
    : none
  return html`<section aria-labelledby="sync-h" class="panel"><h2 id="sync-h">Repos out of sync</h2>${summary}${list}</section>`
}
