import type { Logger } from 'pino'
import { type BackoffOptions, backoffMs, retry } from '../faults/backoff.ts'
import { isConnectionError } from '../faults/errors.ts'

// A database outage is waited out, not failed: work that cannot go on without the store
// retries with backoff while the failure is transient and no one asked to stop.

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

/** The store's backoff: equal jitter keeps a floor, so an outage is not hammered. */
const dbBackoff = (baseMs = 100, maxMs = DB_RETRY_MAX_MS): BackoffOptions => ({
  baseMs,
  maxMs,
  jitter: 'equal',
})

export function dbRetryDelayMs(attempt: number, baseMs?: number, maxMs?: number): number {
  return backoffMs(attempt, dbBackoff(baseMs, maxMs))
}

export function retryWhileDbDown<T>(fn: () => Promise<T>, o: DbRetryOptions): Promise<T> {
  return retry(fn, {
    backoff: dbBackoff(o.baseMs, o.maxMs),
    signal: o.signal,
    onRetry: (err, attempt, delay) =>
      o.logger.warn({ err, attempt, delay }, `${o.what}: database unavailable, retrying`),
  })
}

/**
 * A read whose connection was lost runs once more, on a fresh one: the first read after a
 * restart meets a connection that died with the old server. Only for reads (safe twice).
 */
export async function readAgainIfConnectionLost<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read()
  } catch (err) {
    if (!isConnectionError(err)) throw err
    return read()
  }
}
