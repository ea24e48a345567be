import { Counter, Gauge, Histogram, type Registry } from 'prom-client'

// Sync 1.1 metrics (SPEC section 7). Known label sets start at zero so alerts and rate()
// see a series before the first break.

export const BREAK_REASONS = [
  'since',
  'prev_data',
  'inversion',
  'rev_order',
  'future_rev',
  'sync_event',
] as const
export type BreakReason = (typeof BREAK_REASONS)[number]
export const RESYNC_OUTCOMES = ['ok', 'failed', 'rate_limited'] as const
export const SYNC_STATES = ['synchronized', 'desynchronized', 'resyncing', 'unknown'] as const

export interface ChainMetrics {
  chainBreaksTotal: Counter<'reason'>
  legacyCommitsTotal: Counter
  unverifiableSyncsTotal: Counter
  resyncsTotal: Counter<'outcome'>
  resyncDurationSeconds: Histogram
  repos: Gauge<'sync_state'>
  oldestUnsyncedSeconds: Gauge
}

export function createChainMetrics(
  registry: Registry,
  prefix: string,
  collectRepos?: () => Promise<Record<string, number>>,
): ChainMetrics {
  const chainBreaksTotal = new Counter({
    name: `${prefix}chain_breaks_total`,
    help: 'Firehose commits or #sync events that did not continue a repo chain, by reason',
    labelNames: ['reason'] as const,
    registers: [registry],
  })
  for (const reason of BREAK_REASONS) chainBreaksTotal.inc({ reason }, 0)
  const legacyCommitsTotal = new Counter({
    name: `${prefix}chain_legacy_commits_total`,
    help: 'Commits of a known repo without prevData (legacy), accepted without inversion',
    registers: [registry],
  })
  const unverifiableSyncsTotal = new Counter({
    name: `${prefix}chain_unverifiable_syncs_total`,
    help: '#sync events whose commit could not be verified, ignored',
    registers: [registry],
  })
  const resyncsTotal = new Counter({
    name: `${prefix}resyncs_total`,
    help: 'Repo re-fetches after a chain break or #sync, by outcome',
    labelNames: ['outcome'] as const,
    registers: [registry],
  })
  for (const outcome of RESYNC_OUTCOMES) resyncsTotal.inc({ outcome }, 0)
  const resyncDurationSeconds = new Histogram({
    name: `${prefix}resync_duration_seconds`,
    help: 'Time from a resync start to its snapshot handed to the writer',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers: [registry],
  })
  const repos = new Gauge({
    name: `${prefix}repos`,
    help: 'Tracked repos by sync state (unknown: never seen on the verified firehose)',
    labelNames: ['sync_state'] as const,
    registers: [registry],
    async collect() {
      if (!collectRepos) return
      const counts = await collectRepos()
      for (const s of SYNC_STATES) this.set({ sync_state: s }, counts[s] ?? 0)
      oldestUnsyncedSeconds.set(counts.oldestUnsyncedSeconds ?? 0)
    },
  })
  for (const s of SYNC_STATES) repos.set({ sync_state: s }, 0)
  // Set by the repos gauge's collect (same query): it may lag one scrape behind it.
  const oldestUnsyncedSeconds = new Gauge({
    name: `${prefix}repos_unsynchronized_oldest_seconds`,
    help: 'How long the longest-waiting repo has been desynchronized or resyncing (0: none)',
    registers: [registry],
  })
  oldestUnsyncedSeconds.set(0)
  return {
    oldestUnsyncedSeconds,
    chainBreaksTotal,
    legacyCommitsTotal,
    unverifiableSyncsTotal,
    resyncsTotal,
    resyncDurationSeconds,
    repos,
  }
}
