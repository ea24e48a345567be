import { collectDefaultMetrics, Registry } from 'prom-client'
import { FILTER_NAMES } from '../model/flags.ts'
import { RECOMPILE_KINDS } from '../model/recompile-anatomy.ts'
import { createChainMetrics, type MetricKit, metricKit } from './chain-metrics.ts'
import { steadyNowMs } from './clock.ts'
import { createStoreHealth } from './store-health.ts'

// Metric names are part of the product contract (SPEC section 7): dashboards and alerts
// query them, and a test checks both against what this registry exports.
export const METRIC_PREFIX = 'prompt_appview_'
export const OUTCOMES = ['indexed', 'ignored_rev', 'invalid', 'error'] as const
export type Outcome = (typeof OUTCOMES)[number]
export const SOURCES = ['jetstream', 'firehose', 'replay', 'backfill'] as const
/** Why a source position was refused for the cursor and the lag (ingest/cursor-guard.ts). */
export const CURSOR_REFUSALS = [
  'future_time',
  'bad_time',
  'seq_backwards',
  'seq_leap',
  'stored_cursor',
] as const
export type CursorRefusal = (typeof CURSOR_REFUSALS)[number]

/** Every series (and the hooks) of one registry, as createMetrics builds them. */
export type Metrics = ReturnType<typeof createMetrics>

export interface MetricsOptions {
  version: string
  collections: string[]
  /** Sets `prompt_appview_prompts{flag}` at scrape time, from the database. */
  collectPromptGauge?: () => Promise<Record<string, number>>
  /** Sets `prompt_appview_repos{sync_state}` at scrape time, from the database. */
  collectRepoGauge?: () => Promise<Record<string, number>>
}

export function createMetrics(opts: MetricsOptions) {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry, prefix: METRIC_PREFIX })
  const m = metricKit(registry, METRIC_PREFIX)
  let newestEventUs: number | null = null
  const metrics = {
    ...ingestMetrics(m, opts.collections, () => newestEventUs),
    registry,
    prompts: m.gaugeOf(
      'prompts',
      'Visible prompts by flag (ok = no flag)',
      'flag',
      FILTER_NAMES,
      opts.collectPromptGauge,
    ),
    httpRequestDurationSeconds: m.histogram(
      'http_request_duration_seconds',
      'HTTP request duration by route, method and status code',
      [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      ['route', 'method', 'status_code'],
    ),
    buildInfo: m.gauge('build_info', 'Build information; the value is always 1', ['version']),
    upstreamRequestsTotal: m.counter(
      'upstream_requests_total',
      'HTTP requests to upstream hosts (getRepo, listRepos), by XRPC method and status (or error)',
      ['endpoint', 'status'],
    ),
    repoFetchFailuresTotal: m.counter(
      'repo_fetch_failures_total',
      'getRepo fetches (backfill, resync) refused or failed, by reason (truncated, bad_block_hash, too_large, rate_limited, ...)',
      ['reason'],
    ),
    /** Recompiles indexed, by what changed; one of two kinds counts under each. */
    recompilesTotal: m.counterOf(
      'recompiles_total',
      'Prompt recompiles indexed, by kind: template, memory, metadata, other',
      'kind',
      RECOMPILE_KINDS,
    ),
    /** Ingestion paused by the store, and reads cut at the read timeout (store-health.ts). */
    store: createStoreHealth(m),
    /**
     * The ingest pipeline reports the source time (µs) of the newest event it processed; the
     * lag gauge is now minus that, at scrape time, so a stalled stream shows a growing lag.
     */
    noteNewestEvent: (timeUs: number): void => {
      newestEventUs = Math.max(newestEventUs ?? timeUs, timeUs)
    },
    // Created last, so /metrics keeps listing the Sync 1.1 series after the others.
    ...createChainMetrics(m, opts.collectRepoGauge),
  }
  metrics.buildInfo.set({ version: opts.version }, 1)
  return metrics
}

/** What the sources and the writer report; `newestEventUs` is read at scrape time. */
function ingestMetrics(m: MetricKit, collections: string[], newestEventUs: () => number | null) {
  // Declared in this order so the order of /metrics stays stable.
  return {
    eventsTotal: eventsCounter(m, collections),
    ingestLagSeconds: m.gauge(
      'ingest_lag_seconds',
      'Now minus the source time of the newest event processed',
      undefined,
      function collect() {
        const us = newestEventUs()
        if (us !== null) this.set(Math.max(0, steadyNowMs() / 1000 - us / 1e6))
      },
    ),
    ingestCursor: m.gauge('ingest_cursor', 'The committed source cursor (time_us or seq)'),
    batchDurationSeconds: m.histogram(
      'batch_duration_seconds',
      'Time to apply one batch in one transaction',
      [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    ),
    ...sourceMetrics(m),
  }
}

/** How the upstream connections fared, each known label set starting at zero. */
function sourceMetrics(m: MetricKit) {
  const s = {
    sourceReconnectsTotal: m.counter(
      'source_reconnects_total',
      'Reconnects to the upstream source',
      ['source'],
    ),
    resumeGapsTotal: m.counter(
      'source_resume_gaps_total',
      'Resumes where the source skipped events older than its replay window (backfill needed)',
      ['source'],
    ),
    sourceFaultsTotal: m.counter(
      'source_faults_total',
      'Upstream trouble a source survived (error frames, refused connects, undecodable frames, gaps), by reason',
      ['source', 'reason'],
    ),
    jetstreamBytesTotal: m.counterOf(
      'jetstream_bytes_total',
      'Jetstream frame bytes: stage=wire as received (zstd or text), stage=decoded as JSON text',
      'stage',
      ['wire', 'decoded'],
    ),
    cursorRefusedTotal: m.counter(
      'cursor_refused_total',
      'Source positions (times, seqs) refused for the cursor and the lag; events still applied',
      ['source', 'reason'],
    ),
  }
  for (const source of SOURCES) {
    for (const reason of CURSOR_REFUSALS) s.cursorRefusedTotal.inc({ source, reason }, 0)
    s.sourceReconnectsTotal.inc({ source }, 0)
    s.resumeGapsTotal.inc({ source }, 0)
  }
  return s
}

function eventsCounter(m: MetricKit, collections: string[]) {
  const eventsTotal = m.counter(
    'events_total',
    'Events processed, by source, collection, operation and outcome',
    ['source', 'collection', 'op', 'outcome'],
  )
  // Known label sets start at zero, so rate() and alerts see a series before the first event.
  for (const source of SOURCES) {
    const zero = (collection: string, op: string, outcomes: readonly string[]) => {
      for (const outcome of outcomes) eventsTotal.inc({ source, collection, op, outcome }, 0)
    }
    for (const collection of collections) {
      for (const op of ['create', 'update', 'delete']) zero(collection, op, OUTCOMES)
    }
    for (const op of ['account', 'identity'])
      zero('unknown', op, ['indexed', 'ignored_rev', 'error'])
    zero('unknown', 'unknown', ['error'])
  }
  return eventsTotal
}
