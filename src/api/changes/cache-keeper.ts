import { ANY_REPO, type AnswerCache } from '../answer-cache.ts'
import type { TailPage, TailReader } from './tail.ts'

// Keeps the answer cache true to the change log: the repos of each change row say what to
// drop, and hits are served only until `trustMs` after the start of the last clean poll, so
// an answer is at most `trustMs` older than a commit that changed it, in any process and
// while the database is down (the committing process distrusts the cache at once).

/** How long after a poll's start its result vouches for the cache (the staleness bound). */
export const CACHE_TRUST_MS = 750

export class AnswerCacheKeeper implements TailReader {
  readonly #cache: AnswerCache
  readonly #trustMs: number

  constructor(cache: AnswerCache, trustMs = CACHE_TRUST_MS) {
    this.#cache = cache
    this.#trustMs = trustMs
  }

  wantsRows(): boolean {
    return false
  }

  read({ rows }: TailPage): void {
    this.#cache.invalidateRepos([ANY_REPO, ...new Set(rows.map((r) => r.did))])
  }

  /** Rows were jumped over (the start, a burst): any answer may be stale. */
  skipped(): void {
    this.#cache.clear()
  }

  /** A poll during which this process committed may miss that commit: it vouches for nothing. */
  polled(startedAt: number, clean: boolean): void {
    if (clean) this.#cache.trustUntil(startedAt + this.#trustMs)
  }

  committed(): void {
    this.#cache.distrust()
  }

  close(): void {
    this.#cache.distrust()
  }
}
