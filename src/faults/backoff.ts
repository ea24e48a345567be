// The one retry delay of the product: capped exponential backoff with jitter. Every place
// that waits before trying again (source reconnects, repo fetches and resyncs, store calls
// during a database outage, the driver's reconnects) asks this function, with its own
// parameters, so the shapes cannot drift apart.

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
  const random = o.random ?? Math.random
  switch (o.jitter) {
    case 'full':
      return Math.floor(random() * ceiling)
    case 'equal':
      return ceiling / 2 + (random() * ceiling) / 2
    case 'none':
      return ceiling
  }
}
