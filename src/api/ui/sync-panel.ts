import { reposOutOfSync } from '../reads.ts'
import { apiFind, seg } from './api-client.ts'
import { repoHref, time } from './components.ts'
import { type Html, html } from './html.ts'
import type { PageContext } from './page-route.ts'

// "Repos out of sync" on the overview (Sync 1.1): the counts by sync state, and the repos
// waiting longest, each read through /v1/repos so a hidden repo is left out as the API
// marks it.

const SHOWN = 10

interface RepoSync {
  did: string
  account: { hidden: boolean }
  sync: { state: string | null; reason: string | null; since: string | null }
}

export async function syncPanel(ctx: PageContext): Promise<Html> {
  const { counts, dids } = await reposOutOfSync(ctx.db, SHOWN)
  const repos = (
    await Promise.all(dids.map((d) => apiFind<RepoSync>(ctx.app, `/v1/repos/${seg(d)}`)))
  ).filter((r): r is RepoSync => r !== null && !r.account.hidden)
  const states = ['synchronized', 'desynchronized', 'resyncing', 'unknown'].filter((s) => counts[s])
  const summary = states.length
    ? html`<p>${states.map((s, i) => html`${i ? ' · ' : ''}${s}: <strong>${counts[s] ?? 0}</strong>`)}</p>`
    : html`<p class="muted">No tracked repos yet.</p>`
  const list = repos.length
    ? html`<ul class="out-of-sync">${repos.map(
        (r) =>
          html`<li><a href="${repoHref(r.did)}"><code>${r.did}</code></a> ${r.sync.state ?? ''}${r.sync.reason ? ` (${r.sync.reason})` : ''} since ${time(r.sync.since)}</li>`,
      )}</ul>`
    : html`<p class="health good">Every visible repo is in sync.</p>`
  return html`<section aria-labelledby="sync-h" class="panel"><h2 id="sync-h">Repos out of sync</h2>${summary}${list}</section>`
}
