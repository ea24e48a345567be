import pino from 'pino'
import { describe, expect, it } from 'vitest'
import { dbRetryDelayMs, retryWhileDbDown } from '../../src/db/retry.ts'

// The backoff every store call waits out an outage with (pipeline batches, backfill):
// transient driver errors are retried, anything else is thrown at once, and a stop ends it.

const logger = pino({ level: 'silent' })
const refused = () => Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })

describe('retryWhileDbDown', () => {
  it('retries transient failures until the database answers', async () => {
    let calls = 0
    const value = await retryWhileDbDown(
      async () => {
        if (++calls < 4) throw new Error('query failed', { cause: refused() })
        return 'ok'
      },
      { logger, what: 'test', baseMs: 1 },
    )
    expect(value).toBe('ok')
    expect(calls).toBe(4)
  })

  it('throws a permanent failure at once', async () => {
    let calls = 0
    const bad = Object.assign(new Error('duplicate key'), { code: '23505' })
    await expect(
      retryWhileDbDown(
        async () => {
          calls++
          throw bad
        },
        { logger, what: 'test', baseMs: 1 },
      ),
    ).rejects.toBe(bad)
    expect(calls).toBe(1)
  })

  it('gives up with the last error once stopped', async () => {
    const abort = new AbortController()
    let calls = 0
    const run = retryWhileDbDown(
      async () => {
        if (++calls === 2) abort.abort()
        throw refused()
      },
      { logger, what: 'test', baseMs: 1, signal: abort.signal },
    )
    await expect(run).rejects.toMatchObject({ code: 'ECONNREFUSED' })
    expect(calls).toBe(2)
  })

  it('caps the delay, with jitter below the cap', () => {
    for (const attempt of [0, 5, 50, 5000]) {
      const d = dbRetryDelayMs(attempt, 100, 10_000)
      expect(d).toBeGreaterThanOrEqual(Math.min(10_000, 100 * 2 ** attempt) / 2)
      expect(d).toBeLessThanOrEqual(10_000)
    }
  })
})
