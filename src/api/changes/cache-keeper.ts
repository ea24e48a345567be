import { ANY_REPO, type AnswerCache } from '../answer-cache.ts'
import type { TailPage, TailReader } from './tail.ts'

// Keeps the answer cache true to the change log, as a reader of the process's change tail.
// Every commit that changes an answer writes a change row (a new CID or flags, a record
// appearing, a delete, a takedown's deletes), so the repos of the rows read say which
// answers to drop.
//
// The bound: the cache serves hits only until `trustMs` after the START of the last poll
// that succeeded. Every change committed before that start has been read and applied, so
// an answer is at most `trustMs` older than a commit that changed it, in any process, also
// when the database stops answering (the trust runs out and every request goes to it).
// In the process that commits (`run`, the admin routes), the database's commit signal
// distrusts the cache at once: the next request never sees a stale hit.

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
