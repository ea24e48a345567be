import { describe, expect, it } from 'vitest'
import { runAnatomy } from '../anatomy.ts'
import { runFirehose } from '../firehose.ts'
import { runFreshness } from '../freshness.ts'
import { runIngest } from '../ingest.ts'
import { runMemory } from '../memory.ts'
import { expectSane } from './sane.ts'

// Every benchmark scenario at a tiny scale: it runs end to end, produces sane, non-empty
// figures and passes its correctness checks. Timings are never asserted: this machine's
// speed is not what the test suite checks. Scenarios that need a Postgres server run when
// TEST_DATABASE_URL names one.

const serverUrl = process.env.TEST_DATABASE_URL ?? null

describe('benchmark scenarios at tiny scale', () => {
  it('anatomy: every adversarial case answers its kinds, at a tenth of the size', async () => {
    const r = await runAnatomy({ bytes: 20_000, repeats: 1 })
    expectSane(r)
    expect(r.checks.length).toBe(6)
  })

  it('ingest: product and naive baseline, on PGlite or on the Postgres server the run names', async () => {
    const r = await runIngest({
      serverUrl,
      events: 600,
      baselineEvents: 150,
      pgliteEvents: 600,
      pgliteBaselineEvents: 150,
      dids: 40,
      // The PGlite half ran in the suite's PGlite run already.
      pglite: !serverUrl,
    })
    expectSane(r)
    if (!serverUrl) expect(r.rows.some((x) => x.measure.startsWith('PGlite'))).toBe(true)
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
    'freshness: events sent are seen in the change feed',
    async () => {
      const r = await runFreshness({
        serverUrl: serverUrl!,
        rate: 300,
        seconds: 2,
        warmupS: 1,
        pollMs: 25,
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
        events: 1200,
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
