import { createHash } from 'node:crypto'
import { LRUCache } from 'lru-cache'

// Serialized answers (bytes and ETag), so a hot prompt costs no query, serialization or
// hash; each is tagged with the repos it was built from, and a change row of any of them
// drops it (changes/cache-keeper.ts). Every invalidation bumps `generation`, and a fill whose
// query started before it is not stored, so a stale answer is never put back.

export interface CachedAnswer {
  /** The JSON text as the UTF-8 bytes sent: encoded once, not on every hit. */
  payload: Buffer
  etag: string
}

interface Entry extends CachedAnswer {
  repos: readonly string[]
  expiresAt: number
}

export interface AnswerCacheOptions {
  /** Most bytes of answer text held; the least recently used go first. */
  maxBytes: number
  /** Longest an entry is served at all: fields that change without a change row (provenance). */
  ttlMs: number
  /**
   * Up to this fraction of `ttlMs` (0 to 1, default 0) is taken off each entry's life at
   * random, so entries filled together do not all expire and hit the database at once.
   */
  ttlJitter?: number
  now?: () => number
  random?: () => number
}

/** The tag of answers built from every repo (list pages): any change drops them. */
export const ANY_REPO = '*'

export const etagOf = (body: string | Buffer): string =>
  `W/"${createHash('sha1').update(body).digest('base64url')}"`

export class AnswerCache {
  /** Bounded by bytes, least recently used first out; expiry is checked here (`now`). */
  readonly #entries: LRUCache<string, Entry>
  /** Answers built from each repo's rows: what one change row of that repo invalidates. */
  readonly #byRepo = new Map<string, Set<string>>()
  readonly #opts: AnswerCacheOptions
  readonly #now: () => number
  readonly #random: () => number
  #generation = 0
  /** Until when the cache can vouch for freshness (changes/cache-keeper.ts); no hits after. */
  #trustedUntil = 0

  constructor(opts: AnswerCacheOptions) {
    this.#opts = opts
    this.#now = opts.now ?? (() => performance.now())
    this.#random = opts.random ?? Math.random
    this.#entries = new LRUCache<string, Entry>({
      maxSize: opts.maxBytes,
      sizeCalculation: (e) => Math.max(1, e.payload.length),
      // Evicted, replaced or deleted: no repo names it any more.
      dispose: (e, key) => {
        for (const repo of e.repos) {
          const keys = this.#byRepo.get(repo)
          keys?.delete(key)
          if (keys?.size === 0) this.#byRepo.delete(repo)
        }
      },
    })
  }

  get bytes(): number {
    return this.#entries.calculatedSize
  }

  /** A token to pass to `set`: the fill's query must start after it is taken. */
  get generation(): number {
    return this.#generation
  }

  /** Hits are served until `at` (ms, the clock of `now`), unless distrusted earlier. */
  trustUntil(at: number): void {
    this.#trustedUntil = at
  }

  /** No hits and no fills until the next `trustUntil`: a commit not yet read from the log. */
  distrust(): void {
    this.#trustedUntil = 0
    this.#generation++
  }

  #trusted(): boolean {
    return this.#now() < this.#trustedUntil
  }

  /** True when `key` has an entry that only a lapse of trust keeps from being served. */
  heldUntrusted(key: string): boolean {
    return !this.#trusted() && this.#entries.has(key)
  }

  get(key: string): CachedAnswer | undefined {
    if (!this.#trusted()) return undefined
    const e = this.#entries.get(key)
    if (!e) return undefined
    if (this.#now() > e.expiresAt) {
      this.#entries.delete(key)
      return undefined
    }
    return e
  }

  /** Stores an answer built from `repos`' rows, unless something changed since `generation`. */
  set(
    key: string,
    body: string | Buffer,
    repos: readonly string[],
    generation: number,
  ): CachedAnswer {
    const payload = typeof body === 'string' ? Buffer.from(body) : body
    const answer: CachedAnswer = { payload, etag: etagOf(payload) }
    if (generation !== this.#generation || !this.#trusted() || payload.length > this.#opts.maxBytes)
      return answer
    const { ttlMs, ttlJitter = 0 } = this.#opts
    const expiresAt = this.#now() + ttlMs * (1 - ttlJitter * this.#random())
    // Indexed after the set: replacing the key disposes of the old entry's index first.
    this.#entries.set(key, Object.assign(answer, { repos, expiresAt }))
    if (!this.#entries.has(key)) return answer
    for (const repo of repos) {
      const keys = this.#byRepo.get(repo)
      if (keys) keys.add(key)
      else this.#byRepo.set(repo, new Set([key]))
    }
    return answer
  }

  /** Drops every answer built from these repos' rows. */
  invalidateRepos(repos: Iterable<string>): void {
    this.#generation++
    for (const repo of repos) {
      const keys = this.#byRepo.get(repo)
      if (!keys) continue
      for (const key of [...keys]) this.#entries.delete(key)
    }
  }

  clear(): void {
    this.#generation++
    this.#entries.clear()
    this.#byRepo.clear()
  }
}
