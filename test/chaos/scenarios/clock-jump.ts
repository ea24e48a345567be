import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { COMMON_ENV, replayArgs } from '../lib/baseline.ts'
import { type CliProc, sleep, startCli, tail } from '../lib/cli-proc.ts'
import { compareDigests } from '../lib/compare.ts'
import type { ChaosContext } from '../lib/context.ts'
import { freshDb } from '../lib/db.ts'
import { readDigest } from '../lib/digest.ts'
import { readCursor, waitCaughtUp } from '../lib/progress.ts'
import type { Scenario } from '../lib/scenario.ts'
import { percentOf } from './kill9.ts'

// The product's wall clock stepped under a replay, as NTP or an operator steps it: libfaketime
// (Debian's `faketime`) is preloaded into the CLI with its offset in a file it reads on every
// call, and the offset is changed mid-run. The clock starts a minute after the replay's last
// event, so the events are recent to the product; it is set back 10 minutes (every event
// then looks 4 to 9 minutes in the future), the product is restarted while it is back (its
// stored cursor must be resumed, not refused as future), then it is set forward 10 minutes
// twice. The monotonic clock is left alone, as a step leaves it. Nothing may be refused,
// lost or repeated: the run ends in the uninterrupted run's state, the cursor never moves
// back, and no request is answered 5xx.

const LIBFAKETIME = [
  '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1',
  '/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1',
  '/usr/lib/faketime/libfaketime.so.1',
]
const TEN_MINUTES_S = 600
/** A stepped log line's time may be this far from the offset asked for (start-up, scheduling). */
const SLACK_MS = 30_000

interface Watch {
  stop(): Promise<void>
  /** Backward moves of the cursor, 5xx answers, and how many requests were made. */
  figures(): { backwards: string[]; fiveXx: string[]; requests: number }
}

export const clockJumpScenario: Scenario = {
  name: 'clock-jump',
  short: false,
  injects:
    'the wall clock (libfaketime) set back 10 min mid-replay, a restart while back, then 10 min forward twice',
  async run(ctx, shared) {
    const lib = LIBFAKETIME.find((f) => existsSync(f))
    if (!lib)
      return skip('libfaketime is not installed (Debian faketime, scripts/ci-system-deps.sh)')
    const base = await shared.baseline('pglite')
    const db = await freshDb(ctx, 'pglite')
    const { file, start, setOffset } = offsetControl(ctx, base.set.lastTimeUs)
    const env = { ...COMMON_ENV, ...db.env, BATCH_SIZE: '25', ...fakeClockEnv(lib, file) }
    const procs: CliProc[] = []
    const launch = async () => {
      const p = startCli(replayArgs(base.file), env)
      procs.push(p)
      ctx.defer('stop the product', () => void p.kill9())
      await p.waitListening()
      return p
    }
    let p = await launch()
    const moved = clockMoved(p, start)
    if (moved !== null) {
      p.kill9()
      return skip(moved)
    }
    const watch = watchRun(() => p, ctx)
    const first = base.set.events[0].time_us
    const span = percentOf(first, base.set.lastTimeUs)
    const at = (f: number) => first + f * (base.set.lastTimeUs - first)
    const steps: string[] = []
    const step = async (offset: number, what: string) => {
      setOffset(offset)
      const c = await readCursor(p)
      steps.push(`${what} at ${c === null ? '?' : span(c)}`)
      await sleep(ctx.rand.int(300, 2_000))
    }
    await cursorPast(p, at(0.1 + 0.2 * ctx.rand.next()))
    await step(start - TEN_MINUTES_S, 'back 10 min')
    await cursorPast(p, at(0.35 + 0.1 * ctx.rand.next()))
    const stopped = await p.stop()
    p = await launch()
    const resumedFrom = await readCursor(p)
    steps.push(
      `restarted while back (exit ${stopped}, resumed at ${resumedFrom === null ? '?' : span(resumedFrom)})`,
    )
    await cursorPast(p, at(0.55 + 0.1 * ctx.rand.next()))
    await step(start, 'forward 10 min')
    await cursorPast(p, at(0.75 + 0.1 * ctx.rand.next()))
    await step(start + TEN_MINUTES_S, 'forward 10 min more')
    await waitCaughtUp(p, base.set.lastTimeUs, 300_000)
    await watch.stop()
    const failures: string[] = []
    const w = watch.figures()
    failures.push(...w.backwards, ...w.fiveXx)
    failures.push(...procs.flatMap(refusalsLogged))
    const got = await readDigest(p.url()!, base.fine.records.keys())
    if (got.cursor !== base.set.lastTimeUs)
      failures.push(`cursor ${got.cursor}, expected ${base.set.lastTimeUs}`)
    const cmp = compareDigests(got, base.fine, base.fine.feed)
    failures.push(...cmp.problems)
    ctx.note(`${steps.join('; ')}; ${w.requests} reads and cursor polls; ${cmp.summary}`)
    const code = await p.stop()
    if (code !== 0) failures.push(`SIGTERM exit code ${code}:\n${tail(p.output())}`)
    return {
      failures,
      figures: `${steps.length} steps, ${w.requests} requests, ${w.fiveXx.length} 5xx, digest ${got.hash}`,
    }
  },
}

const skip = (why: string) => ({ failures: [], figures: 'skipped', skipped: why })

/** The file libfaketime reads its offset from, set to a minute after the replay's last event. */
function offsetControl(ctx: ChaosContext, lastTimeUs: number) {
  const file = join(ctx.tempDir('faketime'), 'offset')
  const start = Math.round(lastTimeUs / 1e6 + 60 - Date.now() / 1000)
  const setOffset = (s: number) => writeFileSync(file, `${s >= 0 ? '+' : ''}${s}\n`)
  setOffset(start)
  return { file, start, setOffset }
}

/**
 * libfaketime preloaded, reading its offset from `offsetFile` on every call; the monotonic
 * clock is left alone, as a step of the system clock leaves it.
 */
function fakeClockEnv(lib: string, offsetFile: string): Record<string, string> {
  return {
    LD_PRELOAD: lib,
    FAKETIME_TIMESTAMP_FILE: offsetFile,
    FAKETIME_NO_CACHE: '1',
    FAKETIME_DONT_FAKE_MONOTONIC: '1',
  }
}

/** What a product process logged that a clock step must not cause. */
function refusalsLogged(p: CliProc): string[] {
  return [
    'position refused for the cursor',
    'stored cursor is a future time',
    'stored time of the newest event is in the future',
  ]
    .filter((bad) => p.output().includes(bad))
    .map((bad) => `the log says "${bad}" after a clock step`)
}

/** Null when the product's log times follow the offset; else why the scenario cannot run. */
function clockMoved(p: CliProc, offsetS: number): string | null {
  const line = p
    .output()
    .split('\n')
    .find((l) => l.startsWith('{"level"'))
  const time = line ? (JSON.parse(line) as { time?: number }).time : undefined
  if (time === undefined) return 'no JSON log line to read the product clock from'
  const off = time - Date.now() - offsetS * 1000
  return Math.abs(off) < SLACK_MS
    ? null
    : `libfaketime did not move the product's clock (log time ${new Date(time).toISOString()})`
}

async function cursorPast(p: CliProc, target: number): Promise<void> {
  const deadline = performance.now() + 180_000
  while (performance.now() < deadline && !p.exit()) {
    const c = await readCursor(p)
    if (c !== null && c >= target) return
    if (/"msg":"ingest stopped"/.test(p.output())) return
    await sleep(20)
  }
}

/**
 * Polls the running product all along: the cursor must never move back (across the restart
 * too), and neither a read nor /readyz may answer 5xx. A product that is down (the restart)
 * answers nothing, which is not counted.
 */
function watchRun(current: () => CliProc, ctx: ChaosContext): Watch {
  const backwards: string[] = []
  const fiveXx: string[] = []
  let requests = 0
  let last: number | null = null
  let done = false
  const loop = (async () => {
    while (!done) {
      const p = current()
      const c = await readCursor(p)
      requests++
      if (c !== null) {
        if (last !== null && c < last && backwards.length < 5)
          backwards.push(`the cursor moved back from ${last} to ${c}`)
        last = Math.max(last ?? c, c)
      }
      for (const path of [`/v1/prompts?limit=${ctx.rand.int(1, 50)}`, '/readyz']) {
        const url = p.url()
        if (!url || p.exit()) continue
        requests++
        const status = await fetch(`${url}${path}`, { signal: AbortSignal.timeout(10_000) })
          .then(async (r) => {
            await r.arrayBuffer()
            return r.status
          })
          .catch(() => 0)
        if (status >= 500 && fiveXx.length < 5) fiveXx.push(`${path} answered ${status}`)
      }
      await sleep(50)
    }
  })()
  return {
    async stop() {
      done = true
      await loop
    },
    figures: () => ({ backwards, fiveXx, requests }),
  }
}
