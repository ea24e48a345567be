import { describe, expect, it } from 'vitest'
import { commit } from '../helpers/jetstream-json.ts'
import { v2Server } from '../helpers/jetstream-v2-kit.ts'

// The v2 server shares the v1 server's bounded log (demo-network/event-log.ts): the demo's
// `--wire v2` must stay under the shipped heap as `--wire v1` does.

describe('local Jetstream v2 server: bounded log', () => {
  it('bounds its log by characters as well as by count, keeping the newest', async () => {
    const s = await v2Server({ maxLogEvents: 1000, maxLogBytes: 100_000 })
    for (let n = 1; n <= 40; n++) s.append([{ ...commit(n), pad: 'x'.repeat(10_000) }])
    // Every event holds at least its 10,000-character pad, so the bound keeps at most 11.
    expect(s.logChars).toBeLessThanOrEqual(100_000 + (100_000 >> 3))
    expect(s.size).toBeGreaterThanOrEqual(4)
    expect(s.size).toBeLessThanOrEqual(11)
    expect(s.lastSeq).toBe(40)
  })

  it('keeps the newest event even when it alone is over the character bound', async () => {
    const s = await v2Server({ maxLogBytes: 100 })
    s.append([
      { ...commit(1), pad: 'y'.repeat(500) },
      { ...commit(2), pad: 'y'.repeat(500) },
    ])
    expect(s.size).toBe(1)
    expect(s.lastSeq).toBe(2)
  })
})
