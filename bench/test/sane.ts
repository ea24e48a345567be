import { expect } from 'vitest'
import type { ScenarioResult } from '../lib/report.ts'

/** A scenario's figures are sane numbers and every correctness check it made passed. */
export function expectSane(r: ScenarioResult): void {
  expect(r.rows.length).toBeGreaterThan(0)
  for (const row of r.rows) {
    expect(Number.isFinite(row.value), `${row.measure} is a number`).toBe(true)
    // A growth can be negative: the heap may end smaller than it was at a quarter.
    if (!row.measure.startsWith('growth'))
      expect(row.value, `${row.measure}`).toBeGreaterThanOrEqual(0)
    if (row.baseline !== null && row.baseline !== undefined) {
      // A latency baseline can round to 0 ms; a rate baseline cannot be 0.
      expect(Number.isFinite(row.baseline), `${row.measure} baseline`).toBe(true)
      if (row.unit !== 'ms') expect(row.baseline, `${row.measure} baseline`).toBeGreaterThan(0)
    }
  }
  for (const c of r.checks) expect(c.ok, `${c.name}: ${c.detail}`).toBe(true)
  expect(r.checks.length).toBeGreaterThan(0)
}
