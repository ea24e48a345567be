import type {} from '@atcute/atproto'
import { Client } from '@atcute/client'
import type { Logger } from 'pino'
import { isRetryable } from '../../faults/errors.ts'
import type { RepoSnapshotEvent } from '../../model/events.ts'
import type { Metrics } from '../../observe/metrics.ts'
import {
  type BackfillProgress,
  createProgressRecorder,
  createProgressReporter,
} from './progress.ts'
import { fetchSnapshotWithRetries, type RepoFetchOptions, withRetries } from './repo-snapshot.ts'
import { sharedUpstreamLimiter } from './upstream-limiter.ts'

// Backfill: list the repos of the indexed collections, stream each from its PDS, verify it and
// hand it on as one snapshot; repos marked done are skipped, every request is host-limited.

/** The repo fetch's own options (repo-snapshot.ts) pass through to each repo's fetch. */
export interface BackfillOptions
  extends Pick<
    RepoFetchOptions,
    'resolver' | 'collections' | 'fetch' | 'limiter' | 'limits' | 'allowPrivateNetwork'
  > {
  logger: Logger
  metrics: Metrics
  /** Relay (listReposByCollection) or PDS (listRepos); ignored when `dids` is given. */
  relayUrl?: string
  dids?: string[]
  concurrency: number
  isDone(did: string): boolean | Promise<boolean>
  markDone(did: string, rev: string): void | Promise<void>
  /** Applies one snapshot; a rejection stops the backfill (the store is in trouble). */
  emit(snapshot: RepoSnapshotEvent): Promise<void>
  signal: AbortSignal
  onProgress?: (p: BackfillProgress) => void
  /** Stores the progress for the overview; a rejection is logged, never the run's failure. */
  recordProgress?: (p: BackfillProgress, finished: boolean) => Promise<void>
  /** Tries per repo for transient failures (network, 429, 5xx). Default 3. */
  attempts?: number
  /** Default: a bar on a terminal stderr, log lines otherwise; false for none. */
  progress?: boolean
  retryDelayMs?: number
}

type Counts = Omit<BackfillProgress, 'elapsedMs'>

export interface BackfillSummary extends Omit<Counts, 'listed' | 'listingDone'> {
  /** Repos listed (or given). */
  repos: number
  /** The first failures, with reasons (at most 100). */
  failures: Array<{ did: string; reason: string }>
}

const PAGE = 1000
const NOT_IMPLEMENTED = new Set([401, 403, 404, 405, 501])

export async function runBackfill(opts: BackfillOptions): Promise<BackfillSummary> {
  const started = performance.now()
  const state = { listed: 0, listingDone: false, done: 0, skipped: 0, failed: 0, records: 0 }
  const failures: BackfillSummary['failures'] = []
  const reporter = opts.progress === false ? null : createProgressReporter({ logger: opts.logger })
  const recorder = opts.recordProgress
    ? createProgressRecorder({ write: opts.recordProgress, logger: opts.logger })
    : null
  const snapshotOf = (): BackfillProgress => ({
    ...state,
    elapsedMs: Math.round(performance.now() - started),
  })
  const report = () => {
    const p = snapshotOf()
    reporter?.update(p)
    recorder?.update(p)
    opts.onProgress?.(p)
  }
  recorder?.update(snapshotOf())
  const queue = counted(opts.dids ?? listRepos(opts), state)
  try {
    await runWorkers(opts, queue, async (did) => {
      await backfillRepo(opts, did, state, failures)
      report()
    })
  } finally {
    reporter?.finish(snapshotOf())
    opts.onProgress?.(snapshotOf())
    await recorder?.finish(snapshotOf())
  }
  const { listed, done, skipped, failed, records } = state
  return { repos: listed, done, skipped, failed, records, failures }
}

/** The listed DIDs, each once, counted as they come. */
async function* counted(
  source: AsyncIterable<string> | Iterable<string>,
  state: Counts,
): AsyncGenerator<string> {
  const seen = new Set<string>()
  for await (const did of source) {
    if (seen.has(did)) continue
    seen.add(did)
    state.listed++
    yield did
  }
  state.listingDone = true
}

/** `concurrency` workers on one queue; a store failure in one stops them all and rejects. */
async function runWorkers(
  opts: BackfillOptions,
  queue: AsyncIterator<string>,
  each: (did: string) => Promise<void>,
): Promise<void> {
  const stop = new AbortController()
  const worker = async () => {
    try {
      while (!opts.signal.aborted && !stop.signal.aborted) {
        const next = await queue.next()
        if (next.done) return
        await each(next.value)
      }
    } catch (err) {
      stop.abort()
      throw err
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, opts.concurrency) }, worker))
}

/** One repo: skipped when done, else fetched (with retries), emitted and marked done. */
async function backfillRepo(
  opts: BackfillOptions,
  did: string,
  state: Counts,
  failures: BackfillSummary['failures'],
): Promise<void> {
  if (await opts.isDone(did)) {
    state.skipped++
    return
  }
  const { attempts, retryDelayMs, ...fetchOpts } = opts
  let snapshot: RepoSnapshotEvent
  try {
    snapshot = await fetchSnapshotWithRetries(did, fetchOpts, attempts ?? 3, retryDelayMs)
  } catch (err) {
    if (opts.signal.aborted) return
    const reason = (err as Error).message
    state.failed++
    if (failures.length < 100) failures.push({ did, reason })
    const labels = { source: 'backfill', collection: 'unknown', op: 'unknown', outcome: 'error' }
    opts.metrics.eventsTotal.inc(labels)
    const code = (err as { reason?: string }).reason
    opts.logger.warn({ did, reason, code, retryable: isRetryable(err) }, 'backfill: repo failed')
    return
  }
  // Store failures are not the repo's fault: they stop the run (and reject in runWorkers).
  await opts.emit(snapshot)
  await opts.markDone(did, snapshot.rev)
  state.done++
  state.records += snapshot.records.length
}

// Typed by the lexicon, but a host's answer is checked, not trusted.
type Page = { cursor?: unknown; repos?: Array<{ did?: unknown; active?: unknown }> }
type Repo = NonNullable<Page['repos']>[number]

/** listReposByCollection (a relay), falling back to listRepos (a PDS has only that). */
async function* listRepos(opts: BackfillOptions): AsyncGenerator<string> {
  if (!opts.relayUrl) throw new Error('backfill needs relayUrl or a DID list')
  const base = httpBase(opts.relayUrl)
  const client = limitedClient(base, opts)
  const { signal } = opts
  const hasDid = (r: Repo) => typeof r.did === 'string'
  let implemented = true
  for (const collection of opts.collections) {
    const nsid = collection as `${string}.${string}.${string}`
    implemented = yield* listDids(opts, 'listReposByCollection', hasDid, (cursor) =>
      client.get('com.atproto.sync.listReposByCollection', {
        params: { collection: nsid, limit: PAGE, cursor },
        signal,
      }),
    )
    if (!implemented) break
  }
  if (implemented) return
  opts.logger.info(
    { url: base },
    'no listReposByCollection here (a PDS?): listing every repo with listRepos',
  )
  // Inactive repos cannot be fetched; their account state comes from the live stream.
  const active = (r: Repo) => hasDid(r) && r.active !== false
  const listedAll = yield* listDids(opts, 'listRepos', active, (cursor) =>
    client.get('com.atproto.sync.listRepos', { params: { limit: PAGE, cursor }, signal }),
  )
  if (!listedAll) throw new Error(`${base} implements neither listReposByCollection nor listRepos`)
}

/**
 * The DIDs `keep` accepts, every page of one list, each call retried; false when the host does
 * not implement the method.
 */
async function* listDids(
  opts: BackfillOptions,
  method: string,
  keep: (r: Repo) => boolean,
  send: (cursor: string | undefined) => Promise<ListAnswer>,
): AsyncGenerator<string, boolean> {
  const page = async (cursor: string | undefined): Promise<Page | null> => {
    const res = await send(cursor)
    if (res.ok) return res.data
    // A relay answers; the reference PDS does not know the method and tries to proxy it
    // to an AppView, which without a login is a 401 rather than a 501.
    if (NOT_IMPLEMENTED.has(res.status) || res.data.error === 'MethodNotImplemented') return null
    const { error, message } = res.data
    const text = `${method}: HTTP ${res.status} ${error} ${message ?? ''}`.trim()
    throw Object.assign(new Error(text), { status: res.status })
  }
  let cursor: string | undefined
  do {
    const { attempts, signal, retryDelayMs } = opts
    const p = await withRetries(() => page(cursor), attempts ?? 3, signal, retryDelayMs)
    if (!p) return false
    for (const r of p.repos ?? []) if (keep(r)) yield r.did as string
    cursor = typeof p.cursor === 'string' && p.repos?.length ? p.cursor : undefined
  } while (cursor && !opts.signal.aborted)
  return true
}

type ListAnswer =
  | { ok: true; status: number; data: Page }
  | { ok: false; status: number; data: { error: string; message?: string } }

/** An XRPC client (@atcute/client) whose every request waits its turn at the host's limiter. */
function limitedClient(base: string, opts: BackfillOptions): Client {
  const limiter = opts.limiter ?? sharedUpstreamLimiter
  const { signal, metrics } = opts
  return new Client({
    handler: (pathname, init) => {
      const url = new URL(base + pathname)
      const endpoint = url.pathname.slice(url.pathname.lastIndexOf('/') + 1)
      const send = () =>
        (opts.fetch ?? fetch)(url, {
          ...init,
          signal: AbortSignal.any([signal, AbortSignal.timeout(60_000)]),
        })
      return limiter.run({ url, endpoint, signal, metrics }, send, async (res) => res)
    },
  })
}

/** ws(s):// → http(s)://, without a trailing slash or an /xrpc/… path. */
export function httpBase(url: string): string {
  const u = new URL(url)
  if (u.protocol === 'ws:') u.protocol = 'http:'
  if (u.protocol === 'wss:') u.protocol = 'https:'
  const path = u.pathname.replace(/\/xrpc(\/.*)?$/, '').replace(/\/+$/, '')
  return `${u.protocol}//${u.host}${path}`
}
