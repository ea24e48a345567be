import { join } from 'node:path'
import { COMMON_ENV, replayArgs } from '../lib/baseline.ts'
import { type CliProc, sleep, startCli, tail } from '../lib/cli-proc.ts'
import { compareDigests } from '../lib/compare.ts'
import type { ChaosContext } from '../lib/context.ts'
import { type Driver, freshDb } from '../lib/db.ts'
import { type Digest, readDigest } from '../lib/digest.ts'
import { writeLines } from '../lib/events.ts'
import { FAR_FUTURE_US, type HostileFile, mixHostile } from '../lib/hostile.ts'
import { readCursor, waitCaughtUp } from '../lib/progress.ts'
import type { Scenario } from '../lib/scenario.ts'

// Hostile replay lines mixed into the suite's events. Run A reads the file once through:
// every hostile line counted, none applied, the end state the baseline's. Run B is killed
// (-9) after the far-future refused line and restarted: that line must not have become
// the cursor (it once made the restart skip every later event).

export function hostileReplayScenario(driver: Driver): Scenario {
  return {
    name: `hostile-replay-${driver}`,
    // The short run on PGlite only: the refusals are the source's, not the driver's.
    short: driver === 'pglite',
    injects: `hostile replay lines (far-future refused line, bad JSON, bad fields, stale copies) on ${driver}, kill -9 after the poison line`,
    async run(ctx, shared) {
      const base = await shared.baseline(driver)
      const n = ctx.short ? 150 : 2_000
      const h = mixHostile(ctx.rand, base.set.events, base.set.lines, n)
      const file = join(ctx.tempDir('hostile'), 'hostile.ndjson')
      writeLines(file, h.lines)
      ctx.note(
        `${n} hostile lines (${h.counted} to be refused and counted): ${Object.entries(h.byKind)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')}`,
      )
      const failures: string[] = []
      const trial: Trial = { ctx, driver, file, h, last: base.set.lastTimeUs, failures }
      const a = await runThrough(trial)
      failures.push(
        ...compareDigests(a, base.fine, base.fine.feed).problems.map((p) => `run A: ${p}`),
      )
      const b = await killAfterPoison(trial)
      const cmp = compareDigests(b, base.fine, base.fine.feed)
      ctx.note(`run B (killed after the poison line, restarted): ${cmp.summary}`)
      failures.push(...cmp.problems.map((p) => `run B: ${p}`))
      for (const [name, d] of [
        ['A', a],
        ['B', b],
      ] as const)
        failures.push(...sane(name, d, base.set.lastTimeUs))
      return {
        failures,
        figures: `${n} hostile lines, ${h.counted} refused, digests ${a.hash}/${b.hash}`,
      }
    },
  }
}

/** The cursor and lag figures must come from applied events only. */
function sane(name: string, d: Digest, last: number): string[] {
  const out: string[] = []
  if (d.cursor !== last)
    out.push(`run ${name}: cursor ${d.cursor}, expected ${last} (the last clean line)`)
  if (d.lastEventAt && Date.parse(d.lastEventAt) > Date.now() + 5 * 60_000)
    out.push(`run ${name}: lastEventAt ${d.lastEventAt} is in the future (lag alert blind)`)
  return out
}

/** What both runs read: the hostile file, its last clean time_us, and where they report. */
interface Trial {
  ctx: ChaosContext
  driver: Driver
  file: string
  h: HostileFile
  last: number
  failures: string[]
}

async function runThrough({ ctx, driver, file, h, last, failures }: Trial): Promise<Digest> {
  const db = await freshDb(ctx, driver)
  const p = startCli(replayArgs(file), { ...COMMON_ENV, ...db.env })
  ctx.defer('stop run A', () => void p.kill9())
  await p.waitListening()
  await waitCaughtUp(p, last, 300_000)
  await waitFor(p, /"msg":"replay finished"/)
  const fin = /"skippedBad":(\d+)[^\n]*"msg":"replay finished"/.exec(p.output())
  const skipped = fin ? Number(fin[1]) : null
  const errors = await errorCount(p.url()!)
  ctx.note(
    `run A (straight through): replay finished with skippedBad ${skipped}, events_total{outcome="error"} ${errors}, expected ${h.counted}`,
  )
  if (skipped !== h.counted) failures.push(`run A: skippedBad ${skipped}, expected ${h.counted}`)
  if (errors < h.counted)
    failures.push(`run A: only ${errors} errors counted in metrics for ${h.counted} refused lines`)
  if (p.exit()) failures.push(`run A: the process exited:\n${tail(p.output())}`)
  const d = await readDigest(p.url()!)
  const code = await p.stop()
  if (code !== 0) failures.push(`run A: SIGTERM exit code ${code}`)
  return d
}

async function killAfterPoison({ ctx, driver, file, h, last, failures }: Trial): Promise<Digest> {
  const db = await freshDb(ctx, driver)
  // Small batches: the kill must land after the poison line and well before the end. The
  // restart only has to finish, at the default size.
  const env = { ...COMMON_ENV, ...db.env }
  const first = startCli(replayArgs(file), { ...env, BATCH_SIZE: '10' })
  ctx.defer('stop run B', () => void first.kill9())
  await first.waitListening()
  let c: number | null = null
  const deadline = Date.now() + 300_000
  while (Date.now() < deadline && !first.exit()) {
    c = await readCursor(first)
    if (c !== null && c >= h.afterPoisonUs) break
    await sleep(25)
  }
  first.kill9()
  await first.exited
  ctx.note(
    `run B: kill -9 with the stored cursor at ${c === FAR_FUTURE_US ? `${c} (POISONED: the refused line's time_us)` : c} (poison line before time_us ${h.afterPoisonUs}, last clean ${last})`,
  )
  const p = startCli(replayArgs(file), env)
  ctx.defer('stop run B restart', () => void p.kill9())
  await p.waitListening()
  await waitCaughtUp(p, last, 300_000)
  const d = await readDigest(p.url()!)
  const code = await p.stop()
  if (code !== 0) failures.push(`run B: SIGTERM exit code ${code}`)
  return d
}

async function waitFor(p: CliProc, re: RegExp): Promise<void> {
  const deadline = Date.now() + 60_000
  while (!re.test(p.output()) && Date.now() < deadline) await sleep(20)
}

async function errorCount(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text()
  let sum = 0
  for (const m of text.matchAll(/^prompt_appview_events_total\{([^}]*)\} (\S+)$/gm))
    if (/outcome="error"/.test(m[1])) sum += Number(m[2])
  return sum
}
