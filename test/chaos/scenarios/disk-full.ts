import { join } from 'node:path'
import { mountTmpfs } from '../../helpers/tmpfs.ts'
import { COMMON_ENV, replayArgs } from '../lib/baseline.ts'
import { type CliProc, describeExit, sleep, startCli, tail } from '../lib/cli-proc.ts'
import { compareDigests } from '../lib/compare.ts'
import { readDigest } from '../lib/digest.ts'
import { readCursor, waitCaughtUp } from '../lib/progress.ts'
import type { Scenario } from '../lib/scenario.ts'
import { percentOf } from './kill9.ts'

// The embedded default's disk fills mid-replay: its data directory is on a tmpfs, shrunk to
// just above what it holds at a random point of the run, with PGlite's free-space reserve
// either kept (it pauses before a write fails) or off (writes fail with ENOSPC, and PGlite
// may PANIC and be opened again). Ingestion must pause (the metric says so), /readyz and a
// read must answer within seconds, the cursor must hold, and after a random while the tmpfs
// grows again: the run resumes by itself and ends in the uninterrupted run's state.

const BIG = 512 << 20

export const diskFullScenario: Scenario = {
  name: 'disk-full-pglite',
  short: true,
  injects: 'the PGlite data directory on a tmpfs shrunk to what it holds mid-replay, grown again',
  async run(ctx, shared) {
    const fs = await mountTmpfs(BIG)
    if (typeof fs === 'string') return { failures: [], figures: 'skipped', skipped: fs }
    ctx.defer('unmount the tmpfs', () => fs.destroy())
    const base = await shared.baseline('pglite')
    const reserve = ctx.rand.pick(['0', '16'])
    const p = startCli(replayArgs(base.file), {
      ...COMMON_ENV,
      DATA_DIR: join(fs.dir, 'data'),
      PGLITE_MIN_FREE_MB: reserve,
      BATCH_SIZE: '25',
    })
    ctx.defer('stop the product', () => void p.kill9())
    await p.waitListening()
    const first = base.set.events[0].time_us
    const span = percentOf(first, base.set.lastTimeUs)
    const target = first + (0.1 + 0.5 * ctx.rand.next()) * (base.set.lastTimeUs - first)
    const at = await cursorPast(p, target)
    await fs.fill(reserve === '0' ? ctx.rand.int(0, 1 << 20) : 8 << 20, p.pid)
    const filled = Date.now()
    const failures: string[] = []
    const reasons = await waitPaused(p)
    const pauseMs = Date.now() - filled
    if (reasons.length === 0) failures.push('ingestion never reported a pause with the disk full')
    const probe = await probeWhilePaused(p, reserve !== '0')
    failures.push(...probe.failures)
    const holdMs = ctx.rand.int(500, ctx.short ? 2_000 : 6_000)
    await sleep(holdMs)
    const held = await readCursor(p)
    await fs.resize(BIG)
    const grown = Date.now()
    await cursorPast(p, (held ?? first) + 1)
    const resumeMs = Date.now() - grown
    await waitCaughtUp(p, base.set.lastTimeUs, 180_000)
    const panic = p.output().includes('PGlite stopped on a PANIC')
    for (const bad of ['isolating the bad event', 'event refused by the database, skipped'])
      if (p.output().includes(bad)) failures.push(`the log says "${bad}" on a full disk`)
    const got = await readDigest(p.url()!, base.fine.records.keys())
    const cmp = compareDigests(got, base.fine, base.fine.feed)
    failures.push(...cmp.problems)
    ctx.note(
      `filled at cursor ${at === null ? '?' : span(at)} (PGLITE_MIN_FREE_MB ${reserve}): paused as ${reasons.join(',') || 'nothing'} in ${pauseMs} ms${panic ? ' after a PANIC' : ''}; ${probe.text}; held ${holdMs} ms; resumed ${resumeMs} ms after growing; ${cmp.summary}`,
    )
    const code = await p.stop()
    if (code !== 0) failures.push(`SIGTERM exit code ${code}:\n${tail(p.output())}`)
    if (p.exit() && p.exit()!.code !== 0 && code === null)
      failures.push(`the process died: ${describeExit(p.exit()!)}`)
    return {
      failures,
      figures: `pause ${pauseMs} ms, resume ${resumeMs} ms${panic ? ', PANIC reopened' : ''}, digest ${got.hash}`,
    }
  },
}

export async function cursorPast(p: CliProc, target: number): Promise<number | null> {
  const deadline = Date.now() + 120_000
  let c: number | null = null
  while (Date.now() < deadline && !p.exit()) {
    c = await readCursor(p)
    if (c !== null && c >= target) return c
    await sleep(20)
  }
  return c
}

export async function pausedReasons(p: CliProc): Promise<string[]> {
  try {
    const res = await fetch(`${p.url()}/metrics`, { signal: AbortSignal.timeout(5_000) })
    const text = await res.text()
    return [...text.matchAll(/^prompt_appview_ingest_paused\{reason="([^"]+)"\} 1$/gm)].map(
      (m) => m[1],
    )
  } catch {
    return []
  }
}

export async function waitPaused(p: CliProc): Promise<string[]> {
  const deadline = Date.now() + 30_000
  while (Date.now() < deadline && !p.exit()) {
    const r = await pausedReasons(p)
    if (r.length > 0) return r
    await sleep(50)
  }
  return []
}

/** /readyz and a read answer within 5 s (200 with the reserve; a PANIC may make them 503). */
export async function probeWhilePaused(p: CliProc, reserved: boolean) {
  const failures: string[] = []
  const parts: string[] = []
  for (const path of ['/readyz', '/v1/prompts?limit=3']) {
    const t0 = Date.now()
    let status: number | string
    try {
      status = (await fetch(`${p.url()}${path}`, { signal: AbortSignal.timeout(10_000) })).status
    } catch (err) {
      status = `no answer (${(err as Error).name})`
    }
    const ms = Date.now() - t0
    parts.push(`${path} ${status} in ${ms} ms`)
    const ok = reserved ? status === 200 : status === 200 || status === 503
    if (!ok || ms > 5_000) failures.push(`${path} answered ${status} in ${ms} ms while paused`)
  }
  return { text: parts.join(', '), failures }
}
