import { describe, expect, it } from 'vitest'
import { runReadApi } from '../read-api.ts'
import { expectSane } from './sane.ts'

// The read benchmark at a tiny scale, in a file of its own: it is the longest scenario, and
// a file is what the test runner spreads over its workers. Timings are never asserted.

const serverUrl = process.env.TEST_DATABASE_URL ?? null

describe('benchmark scenarios at tiny scale', () => {
  it.runIf(serverUrl)(
    'read API: lookups and list pages against the baseline route',
    async () => {
      const r = await runReadApi({
        serverUrl: serverUrl!,
        prompts: 2000,
        seedPrompts: 500,
        durationS: 1,
        connections: 10,
        rate: 100,
        rounds: 2,
        warmS: 0,
      })
      expectSane(r)
      expect(r.details.visiblePrompts as number).toBeGreaterThan(1000)
      // Each load ran in two parts for every server, the servers taking turns.
      const rounds = r.details.rounds as Record<string, Record<string, number[]>>
      for (const server of ['product', 'plain', 'bare'])
        for (const kind of ['uniform', 'zipf', 'lists']) {
          expect(rounds[server][kind], `${server} ${kind}`).toHaveLength(2)
          for (const rate of rounds[server][kind]) expect(rate).toBeGreaterThan(0)
        }
    },
    180_000,
  )
})
