import { LRUCache } from 'lru-cache'
import type { Logger } from 'pino'
import type { ChainHead } from '../../../db/repo-chain.ts'
import { backoffMs } from '../../../faults/backoff.ts'
import { isRetryable, UpstreamError } from '../../../faults/errors.ts'
import type { ChainEvent, RepoSnapshotEvent } from '../../../model/events.ts'
import { steadyNowMs } from '../../../observe/clock.ts'
import type { Metrics } from '../../../observe/metrics.ts'
import { stateEvent } from './check-commit.ts'

// Re-fetches desynchronized repos and hands the verified snapshot to the writer (reconciled
// like a backfill), within bounded limits (notes section 8): a token bucket per repo, a cap and
// 429 waits per PDS, capped backoff on failure, every wait on the monotonic clock.

export interface ResyncerOptions {
  /** One verified getRepo, no retries (they are scheduled here). */
  fetchSnapshot: (did: string, signal: AbortSignal) => Promise<RepoSnapshotEvent>
  /** The repo's PDS, for per-host limits. */
  hostOf: (did: string) => Promise<string>
  /** Hands an event to the writer, after everything handed before. */
  emit: (event: ChainEvent | RepoSnapshotEvent) => Promise<void>
  head: (did: string) => Promise<ChainHead | null>
  /** The resynced state, for the chain checks of the frames that follow. */
  settle: (chain: ChainEvent) => void
  logger: Logger
  metrics: Metrics
  concurrency?: number
  perHostConcurrency?: number
  perRepoPerMinute?: number
  retryBaseMs?: number
  retryMaxMs?: number
  maxAttempts?: number
  maxPending?: number
}

interface Job {
  did: string
  attempt: number
  notBefore: number
}

export class Resyncer {
  readonly #o: Required<ResyncerOptions>
  readonly #pending = new Map<string, Job>()
  readonly #running = new Set<string>()
  readonly #buckets = new LRUCache<string, { tokens: number; at: number }>({ max: 16_384 })
  readonly #hosts = new Map<string, { active: number; blockedUntil: number }>()
  readonly #abort = new AbortController()
  readonly #tasks = new Set<Promise<void>>()
  #timer: NodeJS.Timeout | null = null

  constructor(opts: ResyncerOptions) {
    this.#o = {
      concurrency: 4,
      perHostConcurrency: 2,
      perRepoPerMinute: 5,
      retryBaseMs: 1_000,
      retryMaxMs: 10 * 60_000,
      maxAttempts: 8,
      maxPending: 10_000,
      ...opts,
    }
  }

  /** Queues a resync of `did` unless one is queued or running. */
  request(did: string): void {
    if (this.#abort.signal.aborted || this.#pending.has(did) || this.#running.has(did)) return
    if (this.#pending.size >= this.#o.maxPending) {
      this.#o.metrics.resyncsTotal.inc({ outcome: 'failed' })
      this.#o.logger.error({ did }, 'resync queue full: repo left desynchronized')
      return
    }
    this.#pending.set(did, { did, attempt: 1, notBefore: this.#takeToken(did) })
    this.#pump()
  }

  isBusy(did: string): boolean {
    return this.#pending.has(did) || this.#running.has(did)
  }

  async close(): Promise<void> {
    this.#abort.abort()
    if (this.#timer) clearTimeout(this.#timer)
    this.#pending.clear()
    await Promise.allSettled([...this.#tasks])
  }

  /** When the repo's next token is free (now if one is left); counts a rate-limited wait. */
  #takeToken(did: string): number {
    const now = performance.now()
    const rate = this.#o.perRepoPerMinute / 60_000
    const b = this.#buckets.get(did) ?? { tokens: this.#o.perRepoPerMinute, at: now }
    b.tokens = Math.min(this.#o.perRepoPerMinute, b.tokens + (now - b.at) * rate)
    b.at = now
    this.#buckets.set(did, b)
    b.tokens -= 1
    if (b.tokens >= 0) return now
    this.#o.metrics.resyncsTotal.inc({ outcome: 'rate_limited' })
    const wait = -b.tokens / rate
    this.#o.logger.warn({ did, waitMs: Math.round(wait) }, 'resync rate-limited for this repo')
    return now + wait
  }

  #pump(): void {
    if (this.#abort.signal.aborted) return
    const now = performance.now()
    let next = Number.POSITIVE_INFINITY
    for (const job of this.#pending.values()) {
      if (this.#running.size >= this.#o.concurrency) break
      if (job.notBefore > now) {
        next = Math.min(next, job.notBefore)
        continue
      }
      this.#pending.delete(job.did)
      this.#running.add(job.did)
      const task = this.#run(job).finally(() => {
        this.#running.delete(job.did)
        this.#tasks.delete(task)
        this.#pump()
      })
      this.#tasks.add(task)
    }
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
    if (Number.isFinite(next)) this.#timer = setTimeout(() => this.#pump(), next - now + 5)
  }

  async #run(job: Job): Promise<void> {
    const { did } = job
    let host = 'unknown'
    try {
      host = await this.#o.hostOf(did)
    } catch {
      // The fetch resolves again and reports what is wrong.
    }
    const h = this.#hosts.get(host) ?? { active: 0, blockedUntil: 0 }
    this.#hosts.set(host, h)
    if (h.active >= this.#o.perHostConcurrency || h.blockedUntil > performance.now()) {
      // The host is busy or asked us to wait: try again later, without spending an attempt.
      this.#requeue(job, Math.max(h.blockedUntil, performance.now() + 250))
      return
    }
    h.active++
    const started = performance.now()
    try {
      await this.#o.emit(stateEvent(did, 'resyncing', null, steadyNowMs() * 1000))
      const snap = await this.#o.fetchSnapshot(did, this.#abort.signal)
      const head = await this.#o.head(did)
      if (head?.rev && snap.rev < head.rev) {
        this.#o.metrics.chainBreaksTotal.inc({ reason: 'rev_order' })
        throw new UpstreamError(`fetched rev ${snap.rev} is older than ${head.rev}`, {
          retryable: true,
        })
      }
      await this.#o.emit(snap)
      if (snap.commit)
        this.#o.settle({
          ...stateEvent(did, 'synchronized', null, snap.timeUs),
          rev: snap.rev,
          data: snap.commit.data,
          commit: snap.commit.cid,
        })
      this.#o.metrics.resyncsTotal.inc({ outcome: 'ok' })
      this.#o.metrics.resyncDurationSeconds.observe((performance.now() - started) / 1000)
      this.#o.logger.info({ did, rev: snap.rev, records: snap.records.length }, 'repo resynced')
    } catch (err) {
      if (this.#abort.signal.aborted) return
      await this.#failed(job, host, h, err)
    } finally {
      h.active--
      if (h.active === 0 && h.blockedUntil <= performance.now()) this.#hosts.delete(host)
    }
  }

  async #failed(job: Job, host: string, h: { blockedUntil: number }, err: unknown): Promise<void> {
    const { did } = job
    this.#o.metrics.resyncsTotal.inc({ outcome: 'failed' })
    const retryAfter = err instanceof UpstreamError ? err.retryAfterMs : null
    if (retryAfter !== null)
      h.blockedUntil = Math.max(h.blockedUntil, performance.now() + retryAfter)
    const retry = isRetryable(err) && job.attempt < this.#o.maxAttempts
    this.#o.logger.warn(
      { did, host, attempt: job.attempt, retry, reason: (err as Error).message },
      'resync failed',
    )
    if (retry) {
      const { retryBaseMs: baseMs, retryMaxMs: maxMs } = this.#o
      const backoff = backoffMs(job.attempt - 1, { baseMs, maxMs, jitter: 'equal' })
      const wait = Math.max(retryAfter ?? 0, backoff)
      this.#requeue({ ...job, attempt: job.attempt + 1 }, performance.now() + wait)
      return
    }
    // Given up: the repo stays desynchronized (and visible, with its last good state) until
    // its next commit or #sync asks again.
    await this.#o
      .emit(stateEvent(did, 'desynchronized', 'resync_failed', steadyNowMs() * 1000))
      .catch((e) => this.#o.logger.warn({ did, err: e }, 'recording a failed resync failed'))
  }

  #requeue(job: Job, notBefore: number): void {
    if (this.#abort.signal.aborted) return
    this.#pending.set(job.did, { ...job, notBefore })
  }
}
