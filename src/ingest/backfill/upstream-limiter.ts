import { UpstreamError } from '../../faults/errors.ts'
import { sleepUnlessAborted } from '../../faults/timers.ts'
import type { Metrics } from '../../observe/metrics.ts'

// Requests to one upstream host: at most `perHost` at once, all held while the host asks for a
// wait (429/503 `retry-after`, `ratelimit-reset`), a 429 retried up to `maxWaits` times.

export interface UpstreamLimiterOptions {
  perHost?: number
  maxWaits?: number
  maxWaitMs?: number
  /** A 429 without a wait in its headers: this, doubling per wait. */
  backoffMs?: number
  /** Hosts remembered at once (idle ones are forgotten first). */
  maxHosts?: number
}

export interface UpstreamRequest {
  url: URL
  /** The XRPC method, for the metric. */
  endpoint: string
  signal?: AbortSignal
  metrics?: Metrics
}

interface Host {
  active: number
  /** On the monotonic clock: a step of the wall clock neither lengthens nor skips a wait. */
  blockedUntil: number
  queue: Array<() => void>
}

export class UpstreamLimiter {
  readonly #o: Required<UpstreamLimiterOptions>
  readonly #hosts = new Map<string, Host>()

  constructor(o: UpstreamLimiterOptions = {}) {
    this.#o = {
      perHost: 4,
      maxWaits: 6,
      maxWaitMs: 5 * 60_000,
      backoffMs: 1_000,
      maxHosts: 10_000,
      ...o,
    }
  }

  /**
   * Runs `send` (one HTTP request) under the host's limits, again after each 429 wait, and
   * `consume` on the first answer that is not a 429, holding the host's slot until it ends.
   */
  async run<T>(
    req: UpstreamRequest,
    send: () => Promise<Response>,
    consume: (res: Response) => Promise<T>,
  ): Promise<T> {
    const { url, endpoint, signal } = req
    const count = (status: string) => req.metrics?.upstreamRequestsTotal.inc({ endpoint, status })
    const host = await this.#acquire(url.host, signal)
    try {
      for (let waits = 0; ; waits++) {
        await this.#waitUnblocked(host, signal)
        let res: Response
        try {
          res = await send()
        } catch (err) {
          count('error')
          throw err
        }
        count(String(res.status))
        const wait = retryAfterMs(res.headers)
        const { status } = res
        if (wait !== null && (status === 429 || status === 503 || remaining(res.headers) === '0'))
          block(host, Math.min(wait, this.#o.maxWaitMs))
        if (status !== 429) return await consume(res)
        await res.body?.cancel().catch(() => {})
        const ask = wait ?? this.#o.backoffMs * 2 ** waits
        if (waits + 1 >= this.#o.maxWaits || ask > this.#o.maxWaitMs)
          throw new UpstreamError(
            `${endpoint} ${url.host}: still HTTP 429 after ${waits + 1} tries (asked to wait ${Math.round(ask)} ms)`,
            { retryable: true, reason: 'rate_limited', retryAfterMs: ask },
          )
        block(host, ask)
      }
    } finally {
      this.#release(url.host, host)
    }
  }

  async #waitUnblocked(host: Host, signal: AbortSignal | undefined): Promise<void> {
    while (host.blockedUntil > performance.now()) {
      const ms = host.blockedUntil - performance.now()
      await sleepUnlessAborted(ms, signal)
      signal?.throwIfAborted()
    }
  }

  async #acquire(name: string, signal: AbortSignal | undefined): Promise<Host> {
    let host = this.#hosts.get(name)
    if (!host) {
      host = { active: 0, blockedUntil: 0, queue: [] }
      this.#hosts.set(name, host)
      if (this.#hosts.size > this.#o.maxHosts) this.#forgetIdle()
    }
    if (host.active >= this.#o.perHost) {
      const h = host
      await new Promise<void>((resolve, reject) => {
        const go = () => {
          signal?.removeEventListener('abort', stop)
          resolve()
        }
        const stop = () => {
          h.queue.splice(h.queue.indexOf(go), 1)
          reject(signal?.reason)
        }
        signal?.addEventListener('abort', stop, { once: true })
        h.queue.push(go)
      })
    }
    host.active++
    return host
  }

  #release(name: string, host: Host): void {
    host.active--
    const next = host.queue.shift()
    if (next) next()
    else if (host.active === 0 && host.blockedUntil <= performance.now()) this.#hosts.delete(name)
  }

  #forgetIdle(): void {
    for (const [name, h] of this.#hosts) {
      if (this.#hosts.size <= this.#o.maxHosts) return
      if (h.active === 0 && h.queue.length === 0) this.#hosts.delete(name)
    }
  }
}

const block = (host: Host, ms: number) => {
  host.blockedUntil = Math.max(host.blockedUntil, performance.now() + ms)
}
const remaining = (headers: Headers) => headers.get('ratelimit-remaining')

/** `retry-after` (seconds or an HTTP date), else `ratelimit-reset` (seconds), as a delay in ms. */
export function retryAfterMs(headers: Headers, now = Date.now()): number | null {
  const after = headers.get('retry-after')
  if (after) {
    const secs = Number(after)
    if (Number.isFinite(secs) && secs >= 0) return secs * 1000
    const at = Date.parse(after)
    if (Number.isFinite(at)) return Math.max(0, at - now)
  }
  const reset = Number(headers.get('ratelimit-reset') ?? Number.NaN)
  if (remaining(headers) === '0' && Number.isFinite(reset) && reset >= 0) {
    // Seconds from now (the IETF draft); a value this large is an epoch time.
    return reset > 1e9 ? Math.max(0, reset * 1000 - now) : reset * 1000
  }
  return null
}

/** One limiter per process unless a caller brings its own: limits hold across callers. */
export const sharedUpstreamLimiter = new UpstreamLimiter()
