import { compareDigests } from '../lib/compare.ts'
import type { Driver } from '../lib/db.ts'
import type { Scenario } from '../lib/scenario.ts'

// No fault: the default batching must reach the one-event-per-batch run's state, and its
// feed must fold changes, never invent them. Every other scenario leans on this.

export function batchingScenario(driver: Driver): Scenario {
  return {
    name: `baseline-${driver}`,
    short: true,
    injects: `nothing: default batching vs one event per batch on ${driver}`,
    async run(ctx, shared) {
      const b = await shared.baseline(driver)
      const cmp = compareDigests(b.normal, b.fine, b.fine.feed)
      ctx.note(
        `${b.set.events.length} events; one per batch ${(b.fineMs / 1000).toFixed(1)} s, default ${(b.normalMs / 1000).toFixed(1)} s; ${cmp.summary}`,
      )
      const failures = [...cmp.problems]
      if (b.fine.cursor !== b.set.lastTimeUs)
        failures.push(`cursor ${b.fine.cursor}, expected ${b.set.lastTimeUs}`)
      return {
        failures,
        figures: `${b.fine.records.size} records, ${b.fine.feed.length}/${b.normal.feed.length} feed rows (fine/default), digest ${b.fine.hash}`,
      }
    },
  }
}
