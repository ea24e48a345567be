import type { FastifyRateLimitStore } from '@fastify/rate-limit'
import { LRUCache } from 'lru-cache'

// @fastify/rate-limit's own store times windows by Date.now(), so a clock set back ten minutes
// would keep a client at 429 for eleven: this one keeps them on the monotonic clock.

interface Window {
  current: number
  startedAt: number
}

type Result = (error: Error | null, result?: { current: number; ttl: number }) => void

/** Clients remembered at once, as the plugin's own store (least recently seen first out). */
const CLIENTS = 5000

export class MonotonicRateLimitStore implements FastifyRateLimitStore {
  readonly #windows = new LRUCache<string, Window>({ max: CLIENTS })

  incr(key: string, cb: Result, timeWindow: number): void {
    const now = performance.now()
    let w = this.#windows.get(key)
    if (!w || w.startedAt + timeWindow <= now) w = { current: 0, startedAt: now }
    w.current++
    this.#windows.set(key, w)
    cb(null, { current: w.current, ttl: timeWindow - (now - w.startedAt) })
  }

  /** The window as it stands, without counting a request (the plugin's `increment: false`). */
  read(key: string, cb: Result, timeWindow: number): void {
    const now = performance.now()
    const w = this.#windows.get(key)
    if (!w || w.startedAt + timeWindow <= now) cb(null, { current: 0, ttl: 0 })
    else cb(null, { current: w.current, ttl: timeWindow - (now - w.startedAt) })
  }

  /** A route with limits of its own counts apart. */
  child(): MonotonicRateLimitStore {
    return new MonotonicRateLimitStore()
  }
}
