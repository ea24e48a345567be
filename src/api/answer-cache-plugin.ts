import type { FastifyInstance } from 'fastify'
import { withTimeout } from '../faults/timers.ts'
import { AnswerCache, type CachedAnswer } from './answer-cache.ts'
import { AnswerCacheKeeper } from './changes/cache-keeper.ts'
import type { ChangeTail } from './changes/tail.ts'

// The app's answer cache: 64 MB holds a few thousand full prompts (2-200 KB each), and the
// TTL caps fields that change without a change row (provenance, indexedAt).

const MAX_BYTES = 64 * 1024 * 1024
const TTL_MS = 30_000
/** Entries live 15 to 30 s, so those filled together do not all expire together. */
const TTL_JITTER = 0.5

/** The cache and what brings it up to date with the change log (changes/tail.ts). */
export interface Answers {
  readonly cache: AnswerCache
  /** Polls the change log (or joins the poll under way); resolves once it is applied. */
  readonly revalidate: () => Promise<void>
}

declare module 'fastify' {
  interface FastifyInstance {
    answers: Answers
  }
}

/** The app's answer cache, kept true by the process's change tail (read before `tail.start`). */
export function installAnswerCache(app: FastifyInstance, tail: ChangeTail): void {
  const cache = new AnswerCache({ maxBytes: MAX_BYTES, ttlMs: TTL_MS, ttlJitter: TTL_JITTER })
  const keeper = new AnswerCacheKeeper(cache)
  tail.add(keeper)
  app.decorate('answers', { cache, revalidate: () => tail.settled() } satisfies Answers)
  app.addHook('onClose', async () => keeper.close())
}

/** Longest a request waits for a poll of the change log to vouch for an entry again. */
const REVALIDATE_WAIT_MS = 250

/**
 * The answer under `key`: cached, or loaded and stored (a throw, a 404, stores nothing). When
 * only a lapse of trust hides an entry, the requests share one poll of the change log first.
 */
export async function cachedAnswer<T>(
  { cache, revalidate }: Answers,
  key: string,
  load: () => Promise<T>,
  serialize: (value: T) => string | Buffer,
  reposOf: (value: T) => readonly string[],
): Promise<CachedAnswer> {
  let hit = cache.get(key)
  if (!hit && cache.heldUntrusted(key)) {
    await withTimeout(revalidate(), REVALIDATE_WAIT_MS, () => {})
    hit = cache.get(key)
  }
  if (hit) return hit
  const generation = cache.generation
  const value = await load()
  return cache.set(key, serialize(value), reposOf(value), generation)
}
