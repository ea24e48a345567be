import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'
import { type ChainMetrics, createChainMetrics } from './chain-metrics.ts'

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
export const FLAG_LABELS = [
  'orphaned',
  'mismatched',
  'staleTemplate',
  'staleMemory',
  'coreMemoryDetached',
  'invalid',
  'ok',
] as const

export interface Metrics extends ChainMetrics {
  registry: Registry
  eventsTotal: Counter<'source' | 'collection' | 'op' | 'outcome'>
  ingestLagSeconds: Gauge
  ingestCursor: Gauge
  batchDurationSeconds: Histogram
  sourceReconnectsTotal: Counter<'source'>
  resumeGapsTotal: Counter<'source'>
  sourceFaultsTotal: Counter<'source' | 'reason'>
  jetstreamBytesTotal: Counter<'stage'>
  cursorRefusedTotal: Counter<'source' | 'reason'>
  prompts: Gauge<'flag'>
  httpRequestDurationSeconds: Histogram<'route' | 'method' | 'status_code'>
  buildInfo: Gauge<'version'>
  upstreamRequestsTotal: Counter<'endpoint' | 'status'>
  repoFetchFailuresTotal: Counter<'reason'>
}

export interface MetricsOptions {
  version: string
  collections: string[]
  /** Sets `prompt_appview_prompts{flag}` at scrape time, from the database. */
  collectPromptGauge?: () => Promise<Record<string, number>>
  /** Seconds since the newest processed event, at scrape time. */
  lagSeconds?: () => number | null
  /** Sets `prompt_appview_repos{sync_state}` at scrape time, from the database. */
  collectRepoGauge?: () => Promise<Record<string, number>>
}

export function createMetrics(opts: MetricsOptions): Metrics {
  const registry = new Registry()
  const p = METRIC_PREFIX
  collectDefaultMetrics({ register: registry, prefix: p })

  const eventsTotal = new Counter({
    name: `${p}events_total`,
    help: 'Events processed, by source, collection, operation and outcome',
    labelNames: ['source', 'collection', 'op', 'outcome'] as const,
    registers: [registry],
  })
  // Known label sets start at zero, so rate() and alerts see a series before the first event.
  for (const source of SOURCES) {
    for (const collection of opts.collections) {
      for (const op of ['create', 'update', 'delete']) {
        for (const outcome of OUTCOMES) eventsTotal.inc({ source, collection, op, outcome }, 0)
      }
    }
    for (const op of ['account', 'identity']) {
      for (const outcome of ['indexed', 'ignored_rev', 'error']) {
        eventsTotal.inc({ source, collection: 'unknown', op, outcome }, 0)
      }
    }
    eventsTotal.inc({ source, collection: 'unknown', op: 'unknown', outcome: 'error' }, 0)
  }

  const ingestLagSeconds = new Gauge({
    name: `${p}ingest_lag_seconds`,
    help: 'Now minus the source time of the newest event processed',
    registers: [registry],
    collect() {
      const lag = opts.lagSeconds?.()
      if (lag != null) this.set(lag)
    },
  })
  const ingestCursor = new Gauge({
    name: `${p}ingest_cursor`,
    help: 'The committed source cursor (time_us or seq)',
    registers: [registry],
  })
  const batchDurationSeconds = new Histogram({
    name: `${p}batch_duration_seconds`,
    help: 'Time to apply one batch in one transaction',
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  })
  const sourceReconnectsTotal = new Counter({
    name: `${p}source_reconnects_total`,
    help: 'Reconnects to the upstream source',
    labelNames: ['source'] as const,
    registers: [registry],
  })
  const resumeGapsTotal = new Counter({
    name: `${p}source_resume_gaps_total`,
    help: 'Resumes where the source skipped events older than its replay window (backfill needed)',
    labelNames: ['source'] as const,
    registers: [registry],
  })
  const sourceFaultsTotal = new Counter({
    name: `${p}source_faults_total`,
    help: 'Upstream trouble a source survived (error frames, refused connects, undecodable frames, gaps), by reason',
    labelNames: ['source', 'reason'] as const,
    registers: [registry],
  })
  const jetstreamBytesTotal = new Counter({
    name: `${p}jetstream_bytes_total`,
    help: 'Jetstream frame bytes: stage=wire as received (zstd or text), stage=decoded as JSON text',
    labelNames: ['stage'] as const,
    registers: [registry],
  })
  for (const stage of ['wire', 'decoded']) jetstreamBytesTotal.inc({ stage }, 0)
  const cursorRefusedTotal = new Counter({
    name: `${p}cursor_refused_total`,
    help: 'Source positions (times, seqs) refused for the cursor and the lag; events still applied',
    labelNames: ['source', 'reason'] as const,
    registers: [registry],
  })
  for (const source of SOURCES) {
    for (const reason of CURSOR_REFUSALS) cursorRefusedTotal.inc({ source, reason }, 0)
    sourceReconnectsTotal.inc({ source }, 0)
    resumeGapsTotal.inc({ source }, 0)
  }
  const prompts = new Gauge({
    name: `${p}prompts`,
    help: 'Visible prompts by flag (ok = no flag)',
    labelNames: ['flag'] as const,
    registers: [registry],
    async collect() {
      if (!opts.collectPromptGauge) return
      const counts = await opts.collectPromptGauge()
      for (const flag of FLAG_LABELS) this.set({ flag }, counts[flag] ?? 0)
    },
  })
  for (const flag of FLAG_LABELS) prompts.set({ flag }, 0)
  const httpRequestDurationSeconds = new Histogram({
    name: `${p}http_request_duration_seconds`,
    help: 'HTTP request duration by route, method and status code',
    labelNames: ['route', 'method', 'status_code'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  })
  const buildInfo = new Gauge({
    name: `${p}build_info`,
    help: 'Build information; the value is always 1',
    labelNames: ['version'] as const,
    registers: [registry],
  })
  buildInfo.set({ version: opts.version }, 1)
  const upstreamRequestsTotal = new Counter({
    name: `${p}upstream_requests_total`,
    help: 'HTTP requests to upstream hosts (getRepo, listRepos), by XRPC method and status (or error)',
    labelNames: ['endpoint', 'status'] as const,
    registers: [registry],
  })
  const repoFetchFailuresTotal = new Counter({
    name: `${p}repo_fetch_failures_total`,
    help: 'getRepo fetches (backfill, resync) refused or failed, by reason (truncated, bad_block_hash, too_large, rate_limited, ...)',
    labelNames: ['reason'] as const,
    registers: [registry],
  })

  return {
    ...createChainMetrics(registry, p, opts.collectRepoGauge),
    registry,
    eventsTotal,
    ingestLagSeconds,
    ingestCursor,
    batchDurationSeconds,
    sourceReconnectsTotal,
    resumeGapsTotal,
    sourceFaultsTotal,
    jetstreamBytesTotal,
    cursorRefusedTotal,
    prompts,
    httpRequestDurationSeconds,
    buildInfo,
    upstreamRequestsTotal,
    repoFetchFailuresTotal,
  }
}
