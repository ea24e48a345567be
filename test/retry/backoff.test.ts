import { describe, expect, it } from 'vitest'
import { backoffMs, retry } from '../../src/faults/backoff.ts'
import { withTimeout } from '../../src/faults/timers.ts'

// The one retry delay: exact values with the random draw injected, so the shape (doubling,
// the cap, each jitter's range) is pinned down, not just bounded.

const top = () => 0.999
const bottom = () => 0
const half = () => 0.5

describe('backoffMs', () => {
  it('doubles from the base per attempt and stops at the cap', () => {
    const o = { baseMs: 100, maxMs: 1000, jitter: 'none' as const }
    expect([0, 1, 2, 3, 4, 10, 1000].map((a) => backoffMs(a, o))).toEqual([
      100, 200, 400, 800, 1000, 1000, 1000,
    ])
  })

  it('full jitter draws in [0, ceiling)', () => {
    const o = { baseMs: 100, maxMs: 1000, jitter: 'full' as const }
    expect([0, 1, 2, 9].map((a) => backoffMs(a, { ...o, random: top }))).toEqual([
      99, 199, 399, 999,
    ])
    expect(backoffMs(5, { ...o, random: bottom })).toBe(0)
    expect(backoffMs(2, { ...o, random: half })).toBe(200)
  })

  it('equal jitter keeps half the ceiling as a floor', () => {
    const o = { baseMs: 100, maxMs: 10_000, jitter: 'equal' as const }
    expect([0, 3, 20].map((a) => backoffMs(a, { ...o, random: bottom }))).toEqual([50, 400, 5000])
    expect([0, 3, 20].map((a) => backoffMs(a, { ...o, random: half }))).toEqual([75, 600, 7500])
  })

  it('stays finite however long an outage lasts, and treats a negative attempt as the first', () => {
    const o = { baseMs: 1, maxMs: Number.POSITIVE_INFINITY, jitter: 'none' as const }
    expect(backoffMs(1e9, o)).toBe(2 ** 30)
    expect(backoffMs(-3, o)).toBe(1)
  })

  it('draws from Math.random unless told otherwise', () => {
    for (let i = 0; i < 100; i++) {
      const d = backoffMs(4, { baseMs: 10, maxMs: 1000, jitter: 'equal' })
      expect(d).toBeGreaterThanOrEqual(80)
      expect(d).toBeLessThan(160)
    }
  })
})

describe('retry', () => {
  const backoff = { baseMs: 1, maxMs: 4, jitter: 'none' as const }
  const transient = () => Object.assign(new Error('reset'), { code: 'ECONNRESET' })

  it('tries again after each transient failure, up to its attempts, waiting the backoff', async () => {
    const seen: Array<[number, number]> = []
    const tries: number[] = []
    const run = retry(
      async (attempt) => {
        tries.push(attempt)
        throw transient()
      },
      { backoff, attempts: 4, onRetry: (_, attempt, delayMs) => seen.push([attempt, delayMs]) },
    )
    await expect(run).rejects.toMatchObject({ code: 'ECONNRESET' })
    expect(tries).toEqual([0, 1, 2, 3])
    expect(seen).toEqual([
      [0, 1],
      [1, 2],
      [2, 4],
    ])
  })

  it('throws a failure its predicate refuses at once, and returns the first success', async () => {
    let calls = 0
    const bad = new Error('bad input')
    await expect(
      retry(
        async () => {
          calls++
          throw bad
        },
        { backoff },
      ),
    ).rejects.toBe(bad)
    expect(calls).toBe(1)
    const ok = await retry(async (attempt) => (attempt < 2 ? Promise.reject(bad) : 'ok'), {
      backoff,
      retryable: () => true,
    })
    expect(ok).toBe('ok')
  })
})

describe('withTimeout', () => {
  it('answers with the work when it is first, else with what `late` gives', async () => {
    expect(await withTimeout(Promise.resolve('work'), 1000, () => 'late')).toBe('work')
    expect(await withTimeout(new Promise(() => {}), 5, () => 'late')).toBe('late')
    await expect(withTimeout(Promise.reject(new Error('no')), 1000, () => 'late')).rejects.toThrow(
      'no',
    )
  })
})
