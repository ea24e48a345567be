import { execFileSync } from 'node:child_process'
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type CliProc, sleep, startCli, tail } from '../chaos/lib/cli-proc.ts'
import { type Digest, readDigest } from '../chaos/lib/digest.ts'
import { makeEvents, writeLines } from '../chaos/lib/events.ts'
import { readCursor, waitCaughtUp } from '../chaos/lib/progress.ts'
import { createTempDatabase, type PgCluster, startPgCluster } from '../helpers/pg-cluster.ts'
import { mountTmpfs, type Tmpfs } from '../helpers/tmpfs.ts'
import { COMMON_ENV, replayArgs } from './fault-run.ts'

// Postgres whose disk fills under `run`: the product's database lives in a tablespace on a
// tmpfs (a private cluster; its WAL stays on the roomy disk, as on a server whose data
// volume fills), shrunk to just above what it holds mid-run. Postgres answers 53100
// disk_full: ingestion must pause (metric, /readyz), reads keep answering, nothing is
// skipped, and once grown the run resumes by itself and ends as an uninterrupted run.

const BIG = 256 << 20
const probe = await mountTmpfs(1 << 20)
const skip = typeof probe === 'string' ? probe : null
if (typeof probe !== 'string') await probe.destroy()
if (skip) console.warn(`Postgres disk-full test skipped: ${skip}`)

describe.skipIf(skip !== null)('a tablespace that fills under Postgres while run ingests', () => {
  const work = mkdtempSync(join(tmpdir(), 'pav-pgfull-'))
  const file = join(work, 'events.ndjson')
  const set = makeEvents(20261208, 1_500)
  const env = { ...COMMON_ENV, BATCH_SIZE: '50' }
  let cluster: PgCluster
  let fs: Tmpfs
  let reference: Digest
  let p: CliProc | null = null

  beforeAll(async () => {
    writeLines(file, set.lines)
    cluster = await startPgCluster()
    const ref = await createTempDatabase(cluster.url, 'ref')
    const r = startCli(replayArgs(file), { ...env, DATABASE_URL: ref.url })
    await r.waitListening()
    await waitCaughtUp(r, set.lastTimeUs, 120_000)
    reference = await readDigest(r.url()!)
    await r.stop()
    const mounted = await mountTmpfs(BIG)
    if (typeof mounted === 'string') throw new Error(mounted)
    fs = mounted
    // The cluster runs as the postgres OS user: it must reach the mount to own a directory on it.
    chmodSync(dirname(fs.dir), 0o755)
    const location = join(fs.dir, 'ts')
    mkdirSync(location)
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim())
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim())
    chownSync(location, uid, gid)
    await admin(cluster.url, `CREATE TABLESPACE small LOCATION '${location}'`)
    await admin(cluster.url, 'CREATE DATABASE full_run TABLESPACE small')
  })
  afterAll(async () => {
    p?.kill9()
    await cluster?.destroy()
    await fs?.destroy()
    rmSync(work, { recursive: true, force: true })
  })

  it('53100 pauses ingestion (metric, /readyz), reads answer, nothing is skipped, and it resumes once grown', async () => {
    const url = new URL(cluster.url)
    url.pathname = '/full_run'
    p = startCli(replayArgs(file), { ...env, DATABASE_URL: url.toString() })
    await p.waitListening()
    const first = set.events[0].time_us
    while (((await readCursor(p)) ?? 0) < first + 0.2 * (set.lastTimeUs - first)) {
      if (p.exit()) throw new Error(tail(p.output()))
      await sleep(25)
    }
    await fs.fill(512 << 10, p.pid)
    const filled = Date.now()
    let reasons: string[] = []
    while (reasons.length === 0 && Date.now() - filled < 30_000) {
      reasons = await pausedReasons(p)
      await sleep(50)
    }
    expect(reasons, tail(p.output())).toEqual(['disk_full'])
    const ready = await fetch(`${p.url()}/readyz`)
    const body = (await ready.json()) as {
      details: { ingest: { paused: { reason: string; error: string } } }
    }
    expect(ready.status).toBe(200)
    expect(body.details.ingest.paused.reason).toBe('disk_full')
    expect((await fetch(`${p.url()}/v1/prompts?limit=3`)).status).toBe(200)
    const held = await readCursor(p)
    await sleep(1000)
    expect(await readCursor(p)).toBe(held)
    await fs.resize(BIG)
    await waitCaughtUp(p, set.lastTimeUs, 120_000)
    expect(p.output()).not.toContain('isolating the bad event')
    const got = await readDigest(p.url()!)
    expect(got.stats).toBe(reference.stats)
    expect([...reference.records].filter(([k, v]) => got.records.get(k) !== v)).toEqual([])
    expect(got.records.size).toBe(reference.records.size)
    console.log(`disk-full (Postgres): paused as ${reasons}, ${body.details.ingest.paused.error}`)
    expect(await p.stop()).toBe(0)
  }, 240_000)
})

async function admin(url: string, statement: string): Promise<void> {
  const c = postgres(url, { max: 1, onnotice: () => {} })
  try {
    await c.unsafe(statement)
  } finally {
    await c.end({ timeout: 5 })
  }
}

async function pausedReasons(p: CliProc): Promise<string[]> {
  const text = await (await fetch(`${p.url()}/metrics`)).text()
  return [...text.matchAll(/^prompt_appview_ingest_paused\{reason="([^"]+)"\} 1$/gm)].map(
    (m) => m[1],
  )
}
