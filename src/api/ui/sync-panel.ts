import { readVisibleSyncStates } from '../../db/read/sync-states.ts'
import type { RepoView } from '../../db/repo-chain.ts'
import { READS } from '../catalog/reads.ts'
import { repoLink, time } from './components.ts'
import { type Html, html } from './html.ts'
import { getHandles } from './names.ts'
import { found, type PageContext, type PageInput } from './page-route.ts'

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

export async function syncPanel(input: PageInput, ctx: PageContext): Promise<Html> {
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
