import { describe, expect, it } from 'vitest'
import { backoffMs } from '../../src/faults/backoff.ts'

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
