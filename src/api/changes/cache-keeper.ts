import { ANY_REPO, type AnswerCache } from '../answer-cache.ts'
import type { TailPage, TailReader } from './tail.ts'

// Keeps the answer cache true to the change log, as a reader of the change tail: every
// commit that changes an answer writes a change row, so the rows' repos say what to drop.
//
// The cache serves hits only until `trustMs` after the START of the last successful poll,
// so an answer is at most `trustMs` older than a commit that changed it, in any process and
// also while the database is down; in the committing process the commit signal distrusts it
// at once.

/** How long after a poll's start its result vouches for the cache (the staleness bound). */
export const CACHE_TRUST_MS = 750

export class AnswerCacheKeeper implements TailReader {
  readonly #cache: AnswerCache
  readonly #trustMs: number

  constructor(cache: AnswerCache, trustMs = CACHE_TRUST_MS) {
    this.#cache = cache
    this.#trustMs = trustMs
  }

  /** Only the repos are needed. */
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

  /**
   * Only a poll with no commit of this process signalled since its start vouches: what it
   * read may miss that commit. A timer tick during a slow poll does not block the trust, or
   * polls slower than the tick (a busy event loop, a slow database) would never grant it.
   */
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
