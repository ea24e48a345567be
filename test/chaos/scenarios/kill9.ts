import { COMMON_ENV, replayArgs } from '../lib/baseline.ts'
import { type CliProc, describeExit, sleep, startCli, tail } from '../lib/cli-proc.ts'
import { compareDigests } from '../lib/compare.ts'
import { type Driver, freshDb } from '../lib/db.ts'
import { readDigest } from '../lib/digest.ts'
import { readCursor, waitCaughtUp } from '../lib/progress.ts'
import type { Scenario } from '../lib/scenario.ts'

// kill -9 at random moments of a replay (during migrations, start-up, batches in flight),
// restarted either at once (the dead process may still be a zombie holding PGlite's lock)
// or after it was reaped; the last run goes to the end and must reach the uninterrupted
// run's state exactly.

export function kill9Scenario(driver: Driver): Scenario {
  return {
    name: `kill9-${driver}`,
    short: true,
    injects: `kill -9 at random points of a replay on ${driver}, restart at once or after reaping`,
    async run(ctx, shared) {
      const base = await shared.baseline(driver)
      const db = await freshDb(ctx, driver)
      const kills = ctx.short ? 4 : 10
      const env = { ...COMMON_ENV, ...db.env }
      const span = percentOf(base.set.events[0].time_us, base.set.lastTimeUs)
      const first = base.set.events[0].time_us
      const last = base.set.lastTimeUs
      // Where the previous run got to: fault points are drawn from the work still left.
      let resumed = first
      for (let i = 1; i <= kills; i++) {
        // Half the kills at a random moment since spawn (migrations and start-up included),
        // half once the stored cursor passes a random point (batches in flight); batch
        // sizes vary between runs, as an operator's restart with new settings would.
        const byProgress = ctx.rand.chance(0.5)
        const left = (last - resumed) / (last - first)
        const delay = Math.floor(ctx.rand.next() * base.normalMs * (0.3 + 0.7 * left))
        const target = resumed + (0.05 + 0.9 * ctx.rand.next()) * (last - resumed)
        const batch = ctx.rand.pick(['1000', '100', '7'])
        const immediate = ctx.rand.chance(0.5)
        const p = startCli(replayArgs(base.file), { ...env, BATCH_SIZE: batch })
        const t0 = Date.now()
        const at = byProgress ? await killAtCursor(p, target) : await killAfter(p, delay)
        const ms = Date.now() - t0
        if (at !== null) resumed = Math.min(Math.max(resumed, at), first + 0.9 * (last - first))
        if (p.exit() && p.exit()!.signal !== 'SIGKILL') {
          return fail(
            `run ${i} exited by itself (${describeExit(p.exit()!)}) before the kill:\n${tail(p.output())}`,
          )
        }
        if (!immediate) await p.exited
        const where = at === null ? 'before the API listened' : `stored cursor at ${span(at)}`
        const why = byProgress ? `once the cursor passed ${span(target)}` : 'at a random moment'
        ctx.note(
          `kill -9 #${i} ${why}, ${ms} ms after spawn (${where}; BATCH_SIZE ${batch}), restart ${immediate ? 'at once' : 'after reaping'}`,
        )
      }
      const p = startCli(replayArgs(base.file), env)
      ctx.defer('stop the last run', () => void p.kill9())
      await p.waitListening()
      await waitCaughtUp(p, base.set.lastTimeUs, 300_000)
      const got = await readDigest(p.url()!, base.fine.records.keys())
      const cmp = compareDigests(got, base.fine, base.fine.feed)
      ctx.note(`after ${kills} kills: ${cmp.summary}`)
      const failures = [...cmp.problems]
      if (got.cursor !== base.set.lastTimeUs)
        failures.push(`cursor ${got.cursor}, expected ${base.set.lastTimeUs}`)
      const code = await p.stop()
      if (code !== 0) failures.push(`SIGTERM exit code ${code}:\n${tail(p.output())}`)
      return {
        failures,
        figures: `${kills} kills, ${got.records.size} records, digest ${got.hash}`,
      }
    },
  }
}

function fail(msg: string) {
  return { failures: [msg], figures: 'aborted' }
}

/** kill -9 as soon as the stored cursor reaches `target` (or after a minute regardless). */
async function killAtCursor(p: CliProc, target: number): Promise<number | null> {
  const deadline = Date.now() + 60_000
  let last: number | null = null
  while (Date.now() < deadline && !p.exit()) {
    const c = await readCursor(p)
    if (c !== null) last = c
    if (c !== null && c >= target) break
    await sleep(25)
  }
  p.kill9()
  return last
}

/** Waits `ms`, polling progress, then kill -9; returns the last cursor seen (null: none). */
async function killAfter(p: CliProc, ms: number): Promise<number | null> {
  const until = Date.now() + ms
  let last: number | null = null
  while (Date.now() < until && !p.exit()) {
    const c = await readCursor(p)
    if (c !== null) last = c
    await sleep(Math.min(25, Math.max(0, until - Date.now())))
  }
  p.kill9()
  return last
}

export function percentOf(first: number, last: number): (c: number) => string {
  return (c) => `${Math.max(0, Math.min(100, ((c - first) / (last - first)) * 100)).toFixed(0)}%`
}
