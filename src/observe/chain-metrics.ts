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

/**
 * Declares metrics on one registry under one prefix. Both builders (metrics.ts, this file)
 * use it, so each declaration says only what differs: its name, help, labels, buckets.
 */
export function metricKit(registry: Registry, prefix: string) {
  const common = <L extends string>(name: string, help: string, labelNames: readonly L[] = []) => ({
    name: `${prefix}${name}`,
    help,
    labelNames,
    registers: [registry],
  })
  const one = <L extends string>(label: L, value: string) =>
    ({ [label]: value }) as Partial<Record<L, string>>
  const counter = <L extends string = string>(name: string, help: string, labels?: readonly L[]) =>
    new Counter<L>(common(name, help, labels))
  const gauge = <L extends string = string>(
    name: string,
    help: string,
    labels?: readonly L[],
    collect?: (this: Gauge<L>) => void | Promise<void>,
  ) => new Gauge<L>({ ...common(name, help, labels), collect })
  return {
    counter,
    gauge,
    /** A counter of one label whose known values start at zero, so rate() sees them at once. */
    counterOf<L extends string>(name: string, help: string, label: L, values: readonly string[]) {
      const c = counter(name, help, [label])
      for (const v of values) c.inc(one(label, v), 0)
      return c
    },
    /**
     * A gauge of one label whose known values start at zero and are set at scrape time from
     * `read` (a database count); `also` sees the same counts, for a gauge that shares the query.
     */
    gaugeOf<L extends string>(
      name: string,
      help: string,
      label: L,
      values: readonly string[],
      read?: () => Promise<Record<string, number>>,
      also?: (counts: Record<string, number>) => void,
    ) {
      const g = gauge(name, help, [label], async function collect() {
        if (!read) return
        const counts = await read()
        for (const v of values) this.set(one(label, v), counts[v] ?? 0)
        also?.(counts)
      })
      for (const v of values) g.set(one(label, v), 0)
      return g
    },
    histogram: <L extends string = string>(
      name: string,
      help: string,
      buckets: number[],
      labels?: readonly L[],
    ) => new Histogram<L>({ ...common(name, help, labels), buckets }),
  }
}

export type MetricKit = ReturnType<typeof metricKit>

export function createChainMetrics(
  m: MetricKit,
  collectRepos?: () => Promise<Record<string, number>>,
) {
  const chain = {
    chainBreaksTotal: m.counterOf(
      'chain_breaks_total',
      'Firehose commits or #sync events that did not continue a repo chain, by reason',
      'reason',
      BREAK_REASONS,
    ),
    legacyCommitsTotal: m.counter(
      'chain_legacy_commits_total',
      'Commits of a known repo without prevData (legacy), accepted without inversion',
    ),
    unverifiableSyncsTotal: m.counter(
      'chain_unverifiable_syncs_total',
      '#sync events whose commit could not be verified, ignored',
    ),
    resyncsTotal: m.counterOf(
      'resyncs_total',
      'Repo re-fetches after a chain break or #sync, by outcome',
      'outcome',
      RESYNC_OUTCOMES,
    ),
    resyncDurationSeconds: m.histogram(
      'resync_duration_seconds',
      'Time from a resync start to its snapshot handed to the writer',
      [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    ),
    repos: m.gaugeOf(
      'repos',
      'Tracked repos by sync state (unknown: never seen on the verified firehose)',
      'sync_state',
      SYNC_STATES,
      collectRepos,
      (counts): void => chain.oldestUnsyncedSeconds.set(counts.oldestUnsyncedSeconds ?? 0),
    ),
    // Set by the repos gauge's collect (same query): it may lag one scrape behind it.
    oldestUnsyncedSeconds: m.gauge(
      'repos_unsynchronized_oldest_seconds',
      'How long the longest-waiting repo has been desynchronized or resyncing (0: none)',
    ),
  }
  chain.oldestUnsyncedSeconds.set(0)
  return chain
}
