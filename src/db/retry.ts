import type { Logger } from 'pino'
import { backoffMs } from '../faults/backoff.ts'
import { isConnectionError, isRetryable } from '../faults/errors.ts'

// A database outage is waited out, not failed: work that cannot go on without the store
// (a batch, a backfilled repo) retries with capped, jittered backoff for as long as the
// failure is a transient one (connection lost, server shutting down) and no one asked to
// stop. Anything else is thrown at once.

export interface DbRetryOptions {
  logger: Logger
  /** What is being retried, for the log. */
  what: string
  signal?: AbortSignal
  baseMs?: number
  /** The cap: once the database is back, work resumes within this long. */
  maxMs?: number
}

export const DB_RETRY_MAX_MS = 10_000

/** The store's retry delay: equal jitter keeps a floor, so an outage is not hammered. */
export function dbRetryDelayMs(attempt: number, baseMs = 100, maxMs = DB_RETRY_MAX_MS): number {
  return backoffMs(attempt, { baseMs, maxMs, jitter: 'equal' })
}

export async function retryWhileDbDown<T>(fn: () => Promise<T>, o: DbRetryOptions): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn()
    } catch (err) {
      if (!isRetryable(err) || o.signal?.aborted) throw err
      const delay = dbRetryDelayMs(attempt, o.baseMs, o.maxMs)
      o.logger.warn({ err, attempt, delay }, `${o.what}: database unavailable, retrying`)
      await sleep(delay, o.signal)
    }
  }
}

/**
 * A read whose connection was lost (a database restart cuts every connection) runs once
 * more, on a fresh one, before its caller sees the failure: the first read after an outage
 * meets a connection that died with the old server, though the new one is up. A second
 * failure is the caller's (a 503 from the API). Only for statements that are safe to run
 * twice: reads.
 */
export async function readAgainIfConnectionLost<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read()
  } catch (err) {
    if (!isConnectionError(err)) throw err
    return read()
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(t)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    const t = setTimeout(done, ms)
    signal?.addEventListener('abort', done, { once: true })
  })
}
