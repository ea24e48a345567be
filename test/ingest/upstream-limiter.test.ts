import { describe, expect, it } from 'vitest'
import { UpstreamLimiter } from '../../src/ingest/backfill/upstream-limiter.ts'
import { concurrencyProbe } from '../helpers/concurrency.ts'
import { testMetrics } from '../helpers/ingest-kit.ts'

// The per-host limiter on its own: concurrency held until the body is read, the host's
// ratelimit headers holding the next request, other hosts unaffected.

const answer =
  (status: number, headers: Record<string, string> = {}) =>
  async () =>
    new Response('ok', { status, headers })

describe('UpstreamLimiter', () => {
  it('holds at most perHost requests to a host at once, each until its body is read', async () => {
    const limiter = new UpstreamLimiter({ perHost: 2 })
    const probe = concurrencyProbe(30)
    const a = new URL('http://a.example/x')
    const b = new URL('http://b.example/x')
    let bDone = 0
    const runs = Array.from({ length: 6 }, () =>
      limiter.run({ url: a, endpoint: 'm' }, answer(200), probe.task),
    )
    // Another host is not queued behind the first one.
    const other = limiter.run({ url: b, endpoint: 'm' }, answer(200), async () => void bDone++)
    await other
    expect(bDone).toBe(1)
    expect(probe.active).toBeGreaterThan(0)
    await Promise.all(runs)
    expect(probe.peak).toBe(2)
  })

  it('ratelimit-remaining 0 with ratelimit-reset holds the next request until the reset', async () => {
    const metrics = testMetrics()
    const limiter = new UpstreamLimiter()
    const url = new URL('http://c.example/x')
    const req = { url, endpoint: 'com.atproto.sync.getRepo', metrics }
    await limiter.run(
      req,
      answer(200, { 'ratelimit-remaining': '0', 'ratelimit-reset': '1' }),
      async () => {},
    )
    const t = Date.now()
    await limiter.run(req, answer(200), async () => {})
    expect(Date.now() - t).toBeGreaterThanOrEqual(900)
    const got = await metrics.upstreamRequestsTotal.get()
    expect(got.values.find((v) => v.labels.status === '200')?.value).toBe(2)
  })

  it('a failed request is counted as error and rethrown', async () => {
    const metrics = testMetrics()
    const limiter = new UpstreamLimiter()
    const req = { url: new URL('http://d.example/x'), endpoint: 'm', metrics }
    const boom = async (): Promise<Response> => {
      throw new TypeError('fetch failed')
    }
    await expect(limiter.run(req, boom, async () => {})).rejects.toThrow('fetch failed')
    const got = await metrics.upstreamRequestsTotal.get()
    expect(got.values.find((v) => v.labels.status === 'error')?.value).toBe(1)
  })
})
