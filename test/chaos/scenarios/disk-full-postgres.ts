import { execFileSync } from 'node:child_process'
import { chmodSync, chownSync, mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import postgres from 'postgres'
import { startPgCluster } from '../../helpers/pg-cluster.ts'
import { mountTmpfs } from '../../helpers/tmpfs.ts'
import { COMMON_ENV, replayArgs } from '../lib/baseline.ts'
import { describeExit, sleep, startCli, tail } from '../lib/cli-proc.ts'
import { compareDigests } from '../lib/compare.ts'
import { readDigest } from '../lib/digest.ts'
import { readCursor, waitCaughtUp } from '../lib/progress.ts'
import type { Scenario } from '../lib/scenario.ts'
import { cursorPast, probeWhilePaused, waitPaused } from './disk-full.ts'
import { percentOf } from './kill9.ts'

// Postgres's disk fills mid-replay: a private cluster keeps the product's database in a
// tablespace on a tmpfs (its WAL stays on the roomy disk, as on a server whose data volume
// fills), shrunk to just above what it holds at a random point of the run. Postgres answers
// 53100 disk_full: ingestion must pause with reason disk_full (the metric says so), /readyz
// and a read must answer 200 within seconds, the cursor must hold, and after a random while
// the tmpfs grows again: the run resumes by itself and ends in the uninterrupted run's state.

const BIG = 512 << 20

export const diskFullPostgresScenario: Scenario = {
  name: 'disk-full-postgres',
  short: false,
  injects: 'the Postgres tablespace on a tmpfs shrunk to what it holds mid-replay, grown again',
  async run(ctx, shared) {
    const fs = await mountTmpfs(BIG)
    if (typeof fs === 'string') return { failures: [], figures: 'skipped', skipped: fs }
    ctx.defer('unmount the tmpfs', () => fs.destroy())
    const base = await shared.baseline('postgres')
    const cluster = await startPgCluster()
    ctx.defer('destroy the private cluster', () => cluster.destroy())
    const location = join(fs.dir, 'ts')
    await tablespaceOn(location, cluster.url)
    const url = new URL(cluster.url)
    url.pathname = '/full_run'
    const p = startCli(replayArgs(base.file), {
      ...COMMON_ENV,
      DATABASE_URL: url.toString(),
      BATCH_SIZE: String(ctx.rand.pick([25, 100, 500])),
    })
    ctx.defer('stop the product', () => void p.kill9())
    await p.waitListening()
    const first = base.set.events[0].time_us
    const span = percentOf(first, base.set.lastTimeUs)
    const target = first + (0.1 + 0.5 * ctx.rand.next()) * (base.set.lastTimeUs - first)
    const at = await cursorPast(p, target)
    const headroom = ctx.rand.int(64 << 10, 1 << 20)
    await fs.fill(headroom, p.pid)
    const filled = performance.now()
    const failures: string[] = []
    const reasons = await waitPaused(p)
    const pauseMs = Math.round(performance.now() - filled)
    if (!reasons.includes('disk_full'))
      failures.push(`ingestion paused as [${reasons.join(',')}], not disk_full, with the disk full`)
    const probe = await probeWhilePaused(p, true)
    failures.push(...probe.failures)
    const held = await readCursor(p)
    const holdMs = ctx.rand.int(1_000, 8_000)
    await sleep(holdMs)
    const after = await readCursor(p)
    if (after !== held) failures.push(`the cursor moved from ${held} to ${after} while paused`)
    await fs.resize(BIG)
    const grown = performance.now()
    await cursorPast(p, (held ?? first) + 1)
    const resumeMs = Math.round(performance.now() - grown)
    const resumed = await waitResumed(p)
    if (!resumed) failures.push('prompt_appview_ingest_paused stayed 1 after the disk grew')
    await waitCaughtUp(p, base.set.lastTimeUs, 300_000)
    for (const bad of ['isolating the bad event', 'event refused by the database, skipped'])
      if (p.output().includes(bad)) failures.push(`the log says "${bad}" on a full disk`)
    const got = await readDigest(p.url()!, base.fine.records.keys())
    const cmp = compareDigests(got, base.fine, base.fine.feed)
    failures.push(...cmp.problems)
    ctx.note(
      `filled at cursor ${at === null ? '?' : span(at)} with ${headroom >> 10} KiB left: paused as ${reasons.join(',') || 'nothing'} in ${pauseMs} ms; ${probe.text}; held ${holdMs} ms at ${held === null ? '?' : span(held)}; resumed ${resumeMs} ms after growing; ${cmp.summary}`,
    )
    const code = await p.stop()
    if (code !== 0) failures.push(`SIGTERM exit code ${code}:\n${tail(p.output())}`)
    if (p.exit() && p.exit()!.code !== 0 && code === null)
      failures.push(`the process died: ${describeExit(p.exit()!)}`)
    return {
      failures,
      figures: `pause ${pauseMs} ms, resume ${resumeMs} ms, digest ${got.hash}`,
    }
  },
}

/** A tablespace at `location` (owned by the cluster's OS user) holding database full_run. */
async function tablespaceOn(location: string, serverUrl: string): Promise<void> {
  // The cluster runs as the postgres OS user: it must reach the mount to own a directory on it.
  chmodSync(dirname(dirname(location)), 0o755)
  mkdirSync(location)
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim())
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim())
  chownSync(location, uid, gid)
  const c = postgres(serverUrl, { max: 1, onnotice: () => {} })
  try {
    await c.unsafe(`CREATE TABLESPACE small LOCATION '${location}'`)
    await c.unsafe('CREATE DATABASE full_run TABLESPACE small')
  } finally {
    await c.end({ timeout: 5 })
  }
}

/** True once the paused gauge reads 0 for every reason (within a minute). */
async function waitResumed(p: Parameters<typeof readCursor>[0]): Promise<boolean> {
  const deadline = performance.now() + 60_000
  while (performance.now() < deadline && !p.exit()) {
    const text = await fetch(`${p.url()}/metrics`, { signal: AbortSignal.timeout(5_000) })
      .then((r) => r.text())
      .catch(() => '')
    if (text && !/^prompt_appview_ingest_paused\{reason="[^"]+"\} 1$/m.test(text)) return true
    await sleep(100)
  }
  return false
}
