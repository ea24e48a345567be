import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type CliProc, sleep, startCli, tail } from '../chaos/lib/cli-proc.ts'
import { type Digest, readDigest } from '../chaos/lib/digest.ts'
import { makeEvents, writeLines } from '../chaos/lib/events.ts'
import { readCursor, waitCaughtUp } from '../chaos/lib/progress.ts'
import { mountTmpfs, type Tmpfs } from '../helpers/tmpfs.ts'
import { COMMON_ENV, replayArgs } from './fault-run.ts'

// The embedded default's data directory on a disk that fills while `run` replays: a tmpfs
// shrunk to just above what it holds once a fifth of the events are in. Ingestion must
// pause (the metric and /readyz say why), reads must keep answering (200, or a quick 503
// while PGlite opens its directory again after a PANIC), the cursor must stand still, and
// once the tmpfs is grown the run must resume by itself and end where an uninterrupted run
// ends. Needs root (mount); skipped with the reason elsewhere.

const EVENTS = 1_200
const BIG = 512 << 20
const probe = await mountTmpfs(1 << 20)
const skip = typeof probe === 'string' ? probe : null
if (typeof probe !== 'string') await probe.destroy()
if (skip) console.warn(`disk-full tests skipped: ${skip}`)

const ENV = { ...COMMON_ENV, BATCH_SIZE: '50', LOG_LEVEL: 'info' }

describe.skipIf(skip !== null)('a disk that fills under PGlite while run ingests', () => {
  const work = mkdtempSync(join(tmpdir(), 'pav-diskfull-'))
  const set = makeEvents(20261206, EVENTS)
  const file = join(work, 'events.ndjson')
  const first = set.events[0].time_us
  let reference: Promise<Digest>
  const procs: CliProc[] = []
  const mounts: Tmpfs[] = []

  beforeAll(() => {
    writeLines(file, set.lines)
    // The uninterrupted run shares nothing with the filled ones but the file: it runs
    // alongside the first, which awaits it only to compare.
    reference = referenceRun()
    reference.catch(() => {}) // awaited by each test; this only keeps it from going unhandled
  })
  afterAll(async () => {
    for (const p of procs) p.kill9()
    await Promise.all(procs.map((p) => p.exited))
    for (const m of mounts) await m.destroy()
    rmSync(work, { recursive: true, force: true })
  })

  function start(dataDir: string, env: Record<string, string>): CliProc {
    const p = startCli(replayArgs(file), { ...ENV, DATA_DIR: dataDir, ...env })
    procs.push(p)
    return p
  }

  async function referenceRun(): Promise<Digest> {
    const p = start(join(work, 'reference'), {})
    await p.waitListening()
    await waitCaughtUp(p, set.lastTimeUs, 120_000)
    const digest = await readDigest(p.url()!)
    await p.stop()
    return digest
  }

  /** Starts a run on a fresh tmpfs and fills it once a fifth of the events are stored. */
  async function fillMidway(reserveMb: number, headroomBytes: number) {
    const fs = await mountTmpfs(BIG)
    if (typeof fs === 'string') throw new Error(fs)
    mounts.push(fs)
    const p = start(join(fs.dir, 'data'), { PGLITE_MIN_FREE_MB: String(reserveMb) })
    await p.waitListening()
    const target = first + 0.2 * (set.lastTimeUs - first)
    while (((await readCursor(p)) ?? 0) < target) {
      if (p.exit()) throw new Error(`exited before filling:\n${tail(p.output())}`)
      await sleep(25)
    }
    await fs.fill(headroomBytes, p.pid)
    return { fs, p, filledAt: Date.now() }
  }

  it('below PGLITE_MIN_FREE_MB: pauses before any write fails, reads answer 200, resumes once grown', async () => {
    const { fs, p, filledAt } = await fillMidway(16, 8 << 20)
    const paused = await waitPaused(p)
    expect(paused, tail(p.output())).toEqual(['disk_full'])
    const pauseMs = Date.now() - filledAt
    const ready = await getTimed(`${p.url()}/readyz`)
    expect(ready.status).toBe(200)
    expect(JSON.parse(ready.body).details.ingest.paused.reason).toBe('disk_full')
    for (const path of ['/v1/stats', '/v1/prompts?limit=5'])
      expect((await getTimed(`${p.url()}${path}`)).status, path).toBe(200)
    const held = await readCursor(p)
    await sleep(1500)
    expect(await readCursor(p), 'the cursor moved during the pause').toBe(held)
    expect(p.output()).toContain('ingestion paused: the disk under the database is full')
    expect(p.output()).not.toContain('isolating the bad event')
    await fs.resize(BIG)
    const grown = Date.now()
    await waitCaughtUp(p, set.lastTimeUs, 120_000)
    expectSameState(await readDigest(p.url()!), await reference)
    expect(await pausedReasons(p)).toEqual([])
    console.log(
      `disk-full (guard): paused ${pauseMs} ms after the fill, caught up ${Date.now() - grown} ms after growing`,
    )
    expect(await p.stop()).toBe(0)
  }, 240_000)

  it('with no reserve (writes fail with ENOSPC, PGlite may PANIC): never hangs or skips, resumes, reopens after a restart', async () => {
    const { fs, p } = await fillMidway(0, 1 << 20)
    const paused = await waitPaused(p)
    expect(paused.length, tail(p.output())).toBe(1)
    const ready = await getTimed(`${p.url()}/readyz`)
    const read = await getTimed(`${p.url()}/v1/prompts?limit=5`)
    // A PANIC leaves PGlite unusable until its directory opens again: a quick 503 meanwhile.
    expect([200, 503]).toContain(ready.status)
    expect([200, 503]).toContain(read.status)
    expect(Math.max(ready.ms, read.ms)).toBeLessThan(5_000)
    const held = await readCursor(p)
    await sleep(1000)
    expect([held, null]).toContain(await readCursor(p))
    await fs.resize(BIG)
    await waitCaughtUp(p, set.lastTimeUs, 180_000)
    expect(p.output()).not.toContain('isolating the bad event')
    expect(p.output()).not.toContain('event refused by the database, skipped')
    expectSameState(await readDigest(p.url()!), await reference)
    console.log(
      `disk-full (no reserve): ${p.output().includes('PGlite stopped on a PANIC') ? 'PANIC, reopened in-process' : 'ENOSPC errors, no PANIC'}`,
    )
    expect(await p.stop()).toBe(0)
    // The directory whose writes failed opens again and holds the same state.
    const again = start(join(fs.dir, 'data'), {})
    await again.waitListening()
    await waitCaughtUp(again, set.lastTimeUs, 60_000)
    expectSameState(await readDigest(again.url()!), await reference)
    expect(await again.stop()).toBe(0)
  }, 240_000)
})

function expectSameState(got: Digest, want: Digest): void {
  expect(got.stats).toBe(want.stats)
  expect(got.records.size).toBe(want.records.size)
  const differ = [...want.records].filter(([k, v]) => got.records.get(k) !== v).map(([k]) => k)
  expect(differ).toEqual([])
}

async function getTimed(url: string) {
  const t0 = Date.now()
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) })
  return { status: res.status, body: await res.text(), ms: Date.now() - t0 }
}

/** The reasons `prompt_appview_ingest_paused` is 1 for. */
async function pausedReasons(p: CliProc): Promise<string[]> {
  const text = await (
    await fetch(`${p.url()}/metrics`, { signal: AbortSignal.timeout(10_000) })
  ).text()
  return [...text.matchAll(/^prompt_appview_ingest_paused\{reason="([^"]+)"\} 1$/gm)].map(
    (m) => m[1],
  )
}

async function waitPaused(p: CliProc): Promise<string[]> {
  const deadline = Date.now() + 30_000
  while (Date.now() < deadline && !p.exit()) {
    const r = await pausedReasons(p)
    if (r.length > 0) return r
    await sleep(50)
  }
  return []
}
