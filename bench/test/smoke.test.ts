import { describe, expect, it } from 'vitest'
import { runAnatomy } from '../anatomy.ts'
import { runFirehose } from '../firehose.ts'
import { runFreshness } from '../freshness.ts'
import { runIngest } from '../ingest.ts'
import type { ScenarioResult } from '../lib/report.ts'
import { runMemory } from '../memory.ts'
import { runReadApi } from '../read-api.ts'

// Every benchmark scenario at a tiny scale: it runs end to end, produces sane, non-empty
// figures and passes its correctness checks. Timings are never asserted: this machine's
// speed is not what the test suite checks. Scenarios that need a Postgres server run when
// TEST_DATABASE_URL names one.

const serverUrl = process.env.TEST_DATABASE_URL ?? null

function expectSane(r: ScenarioResult): void {
  expect(r.rows.length).toBeGreaterThan(0)
  for (const row of r.rows) {
    expect(Number.isFinite(row.value), `${row.measure} is a number`).toBe(true)
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

describe('benchmark scenarios at tiny scale', () => {
  it('anatomy: every adversarial case answers its kinds, at a tenth of the size', async () => {
    const r = await runAnatomy({ bytes: 20_000, repeats: 1 })
    expectSane(r)
    expect(r.checks.length).toBe(6)
  })

  it('ingest: product and naive baseline, PGlite (and Postgres when available)', async () => {
    const r = await runIngest({
      serverUrl,
      events: 1500,
      baselineEvents: 300,
      pgliteEvents: 600,
      pgliteBaselineEvents: 150,
      dids: 40,
      pglite: true,
    })
    expectSane(r)
    expect(r.rows.some((x) => x.measure.startsWith('PGlite'))).toBe(true)
    if (serverUrl) expect(r.rows.some((x) => x.measure.startsWith('Postgres'))).toBe(true)
    expect(r.checks.some((c) => c.name.includes('every matching event'))).toBe(true)
  }, 180_000)

  it('firehose: every matching op of real signed commits is verified and indexed', async () => {
    const r = await runFirehose({
      serverUrl,
      frames: 1200,
      matchingShare: 0.04,
      noiseRepos: 40,
      lettaDids: 10,
    })
    expectSane(r)
    expect(r.checks.find((c) => c.name === 'every matching op indexed')?.ok).toBe(true)
    expect(r.details.otherShare as number).toBeGreaterThanOrEqual(0.95)
  }, 180_000)

  it.runIf(serverUrl)(
    'read API: lookups and list pages against the baseline route',
    async () => {
      const r = await runReadApi({
        serverUrl: serverUrl!,
        prompts: 3000,
        seedPrompts: 800,
        durationS: 1,
        connections: 10,
        rate: 100,
        rounds: 2,
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

  it.runIf(serverUrl)(
    'freshness: events sent are seen in the change feed',
    async () => {
      const r = await runFreshness({
        serverUrl: serverUrl!,
        rate: 300,
        seconds: 3,
        warmupS: 1,
        pollMs: 5,
        drainMs: 60_000,
        dids: 30,
      })
      expectSane(r)
      expect(r.details.observed as number).toBeGreaterThan(0)
    },
    120_000,
  )

  it.runIf(serverUrl)(
    'memory: RSS of the ingest process over a replay through a pipe',
    async () => {
      const r = await runMemory({
        serverUrl: serverUrl!,
        events: 3000,
        dids: 30,
        nodeFlags: [],
        noiseRatio: 0.5,
      })
      expectSane(r)
      expect(r.rows.find((x) => x.measure === 'RSS at 100%')!.value).toBeGreaterThan(10)
    },
    120_000,
  )
})
