import type { Logger } from 'pino'
import type { Database } from '../db/client.ts'
import { changedReposSince, latestChangeSeq } from '../db/read/changes.ts'
import { ANY_REPO, type AnswerCache } from './answer-cache.ts'

// Keeps the answer cache true to the change log. Every commit that changes an answer writes
// a change row (a new CID or flags, a record appearing, a delete, a takedown's deletes), so
// reading the log after the last seq seen says which repos' answers to drop.
//
// The bound: the cache serves hits only until `trustMs` after the START of the last poll
// that succeeded. Every change committed before that start has been read and applied, so
// an answer is at most `trustMs` older than a commit that changed it, in any process, also
// when the database stops answering (the trust runs out and every request goes to it).
// In the process that commits (`run`, the admin routes), the database's commit signal
// distrusts the cache at once and asks for a poll: the next request never sees a stale hit.

export interface ChangeWatchOptions {
  /** Time between polls of the change log. */
  pollMs: number
  /** How long after a poll's start its result vouches for the cache (the staleness bound). */
  trustMs: number
  /** Change rows read per query; past `maxPages` of them the cache is cleared instead. */
  pageSize: number
  maxPages: number
}

export const CHANGE_WATCH_DEFAULTS: ChangeWatchOptions = {
  pollMs: 200,
  trustMs: 750,
  pageSize: 1000,
  maxPages: 10,
}

export interface ChangeWatch {
  /** Polls now (after any poll under way), resolving when the cache is up to date. */
  poll(): Promise<void>
  /** The poll under way, or a new one: what a request held by a lapse of trust waits for. */
  settled(): Promise<void>
  close(): void
}

export function watchChanges(
  db: Database,
  cache: AnswerCache,
  logger: Logger,
  opts: ChangeWatchOptions = CHANGE_WATCH_DEFAULTS,
): ChangeWatch {
  let lastSeq: number | null = null
  let again = false
  /**
   * A commit of this process since the running poll started: what it read may miss that
   * commit, so it must not vouch for the cache. Only commits block trust; a timer tick
   * during a slow poll must not, or polls slower than `pollMs` (a busy event loop, a slow
   * database) would never grant it again and every request would go to the database.
   */
  let signalled = false
  let running: Promise<void> | null = null
  let closed = false

  /** Reads the log after lastSeq; returns false when it was cleared wholesale instead. */
  const readLog = async (since: number): Promise<number> => {
    let seq = since
    for (let page = 0; page < opts.maxPages; page++) {
      const rows = await changedReposSince(db, seq, opts.pageSize)
      if (rows.length === 0) return seq
      cache.invalidateRepos([ANY_REPO, ...new Set(rows.map((r) => r.did))])
      seq = rows[rows.length - 1].seq
      if (rows.length < opts.pageSize) return seq
    }
    // A burst (a backfill, a large takedown): dropping everything is cheaper than reading it.
    const latest = await latestChangeSeq(db)
    cache.clear()
    return latest
  }

  const pollOnce = async () => {
    signalled = false
    const startedAt = Date.now()
    if (lastSeq === null) {
      lastSeq = await latestChangeSeq(db)
      cache.clear()
    } else {
      lastSeq = await readLog(lastSeq)
    }
    // A commit signalled while this poll ran may not be in what it read: poll again first.
    if (!signalled && !closed) cache.trustUntil(startedAt + opts.trustMs)
  }

  const loop = async () => {
    try {
      while (again && !closed) {
        again = false
        await pollOnce()
      }
    } catch (err) {
      // The trust runs out by itself: requests go to the database until a poll succeeds.
      logger.warn({ err }, 'reading the change log for the answer cache failed')
    } finally {
      running = null
    }
  }

  const poll = (): Promise<void> => {
    again = true
    running ??= loop()
    return running
  }

  // A tick while a poll runs is dropped: that poll's result vouches from its own start.
  const timer = setInterval(() => {
    if (!running) void poll()
  }, opts.pollMs)
  timer.unref()
  const stopSignal = db.onCommit(() => {
    cache.distrust()
    signalled = true
    void poll()
  })
  void poll()
  return {
    poll,
    settled: () => running ?? poll(),
    close: () => {
      closed = true
      clearInterval(timer)
      stopSignal()
      cache.distrust()
    },
  }
}
