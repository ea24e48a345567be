import { isRetryable } from './errors.ts'
import { sleepUnlessAborted } from './timers.ts'

// The one retry delay of the product (capped exponential backoff with jitter) and the one
// loop that waits it out, so the shapes of the product's retries cannot drift apart.

export interface BackoffOptions {
  /** The delay of the first retry (attempt 0), before jitter. */
  baseMs: number
  /** The ceiling never grows past this, however many attempts failed. */
  maxMs: number
  /**
   * 'full': anywhere in [0, ceiling), which spreads many clients of one server the most;
   * 'equal': in [ceiling/2, ceiling), which keeps a floor under the wait; 'none': the ceiling.
   */
  jitter: 'full' | 'equal' | 'none'
  /** In [0, 1); injected by tests for exact values. */
  random?: () => number
}

// 2 ** 30 times any sensible base is past every cap: the exponent stops there so a long
// outage's attempt count never overflows into Infinity or NaN.
const MAX_EXPONENT = 30

/** How long to wait before retry number `attempt` (counting from 0). */
export function backoffMs(attempt: number, o: BackoffOptions): number {
  const exponent = Math.min(Math.max(Math.floor(attempt), 0), MAX_EXPONENT)
  const ceiling = Math.min(o.maxMs, o.baseMs * 2 ** exponent)
  if (o.jitter === 'none') return ceiling
  const r = (o.random ?? Math.random)()
  return o.jitter === 'full' ? Math.floor(r * ceiling) : ceiling / 2 + (r * ceiling) / 2
}

export interface RetryOptions {
  backoff: BackoffOptions
  /** Tries in all, the first included; default: until it succeeds. */
  attempts?: number
  /** Whether a failure is worth another try; default: isRetryable. */
  retryable?: (err: unknown) => boolean
  /** Once aborted, the wait ends and the next failure is thrown. */
  signal?: AbortSignal
  /** Told of each failure that will be tried again, with the wait before it. */
  onRetry?: (err: unknown, attempt: number, delayMs: number) => void
}

/**
 * Runs `task` (given its attempt, from 0) until it succeeds, fails for good, runs out of
 * attempts or `signal` aborts, waiting `backoffMs` between tries.
 */
export async function retry<T>(task: (attempt: number) => Promise<T>, o: RetryOptions): Promise<T> {
  const retryable = o.retryable ?? isRetryable
  for (let attempt = 0; ; attempt++) {
    try {
      return await task(attempt)
    } catch (err) {
      if (o.signal?.aborted || attempt + 1 >= (o.attempts ?? Infinity) || !retryable(err)) throw err
      const delayMs = backoffMs(attempt, o.backoff)
      o.onRetry?.(err, attempt, delayMs)
      await sleepUnlessAborted(delayMs, o.signal)
    }
  }
}
