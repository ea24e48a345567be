import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type CliProc, sleep, startCli } from '../chaos/lib/cli-proc.ts'
import { type Digest, readDigest } from '../chaos/lib/digest.ts'
import { makeEvents, writeLines } from '../chaos/lib/events.ts'
import { readCursor, waitCaughtUp } from '../chaos/lib/progress.ts'
import { type LatencyProxy, startLatencyProxy } from '../helpers/latency-proxy.ts'
import { createTempDatabase, type PgCluster, startPgCluster } from '../helpers/pg-cluster.ts'
import { COMMON_ENV, replayArgs } from './fault-run.ts'

// Postgres slow rather than gone, under `run`: a proxy that delays every packet while the
// replay ingests (ingestion slows, loses and repeats nothing), then the prompts table
// locked as an analyst's long query locks it (a read is cut at READ_TIMEOUT_MS and answered
// 503 with Retry-After, /readyz and the metrics say the database is slow, and everything is
// normal again once the lock goes, with no restart).

const READ_TIMEOUT_MS = 1000
const set = makeEvents(20261207, 1_500)

describe('a slow database under run (Postgres)', () => {
  const work = mkdtempSync(join(tmpdir(), 'pav-slowdb-'))
  const file = join(work, 'events.ndjson')
  let cluster: PgCluster
  let proxy: LatencyProxy
  let reference: Digest
  let p: CliProc
  let url: string
  const env = { ...COMMON_ENV, READ_TIMEOUT_MS: String(READ_TIMEOUT_MS), BATCH_SIZE: '50' }

  beforeAll(async () => {
    writeLines(file, set.lines)
    cluster = await startPgCluster()
    proxy = await startLatencyProxy({ host: '127.0.0.1', port: cluster.port })
    const ref = await createTempDatabase(cluster.url, 'ref')
    const r = startCli(replayArgs(file), { ...env, DATABASE_URL: ref.url })
    await r.waitListening()
    await waitCaughtUp(r, set.lastTimeUs, 120_000)
    reference = await readDigest(r.url()!)
    await r.stop()
    const db = await createTempDatabase(cluster.url, 'slow')
    url = db.url
  })
  afterAll(async () => {
    p?.kill9()
    await proxy?.close()
    await cluster?.destroy()
    rmSync(work, { recursive: true, force: true })
  })

  it('packets delayed mid-ingest: ingestion slows, reads stay bounded, and it ends equal to an uninterrupted run', async () => {
    p = startCli(replayArgs(file), { ...env, DATABASE_URL: proxy.urlFor(url) })
    await p.waitListening()
    const first = set.events[0].time_us
    while (((await readCursor(p)) ?? 0) < first + 0.1 * (set.lastTimeUs - first)) await sleep(25)
    proxy.setLatency(100)
    const before = await readCursor(p)
    const reads: number[] = []
    for (let i = 0; i < 5; i++) {
      const r = await timed(`${p.url()}/v1/prompts?limit=${10 + i}`)
      expect([200, 503]).toContain(r.status)
      reads.push(r.ms)
    }
    proxy.setLatency(0)
    // Bounded: the read timeout plus a few round trips of latency, never the handler's 15 s.
    expect(Math.max(...reads)).toBeLessThan(READ_TIMEOUT_MS + 3_000)
    await waitCaughtUp(p, set.lastTimeUs, 120_000)
    const got = await readDigest(p.url()!)
    expect(got.stats).toBe(reference.stats)
    expect([...got.records].filter(([k, v]) => reference.records.get(k) !== v)).toEqual([])
    expect(got.records.size).toBe(reference.records.size)
    console.log(
      `slow-db latency: cursor ${before} when 100 ms per packet began; reads took ${reads.join(', ')} ms`,
    )
  }, 240_000)

  it('a locked table: a read is a 503 with Retry-After within the read timeout; /readyz and metrics say slow; then normal again', async () => {
    const admin = postgres(url, { max: 1, onnotice: () => {} })
    let answer: Awaited<ReturnType<typeof timed>> | null = null
    try {
      await admin.begin(async (tx) => {
        await tx`LOCK TABLE prompts IN ACCESS EXCLUSIVE MODE`
        answer = await timed(`${p.url()}/v1/prompts?limit=33`)
      })
    } finally {
      await admin.end({ timeout: 5 })
    }
    const a = answer as unknown as Awaited<ReturnType<typeof timed>>
    expect(a.status).toBe(503)
    expect(a.retryAfter).not.toBeNull()
    expect(JSON.parse(a.body).message).toMatch(/database slow/)
    expect(a.ms).toBeLessThan(READ_TIMEOUT_MS + 2_000)
    const ready = await timed(`${p.url()}/readyz`)
    expect(ready.status).toBe(200)
    expect(JSON.parse(ready.body).details.database.slow).toBe(true)
    const metrics = await (await fetch(`${p.url()}/metrics`)).text()
    expect(metrics).toMatch(/^prompt_appview_db_statement_timeouts_total [1-9]/m)
    expect(metrics).toMatch(/^prompt_appview_db_slow 1$/m)
    // The lock is gone: the same read answers, no restart.
    expect((await timed(`${p.url()}/v1/prompts?limit=33`)).status).toBe(200)
    console.log(`slow-db lock: a read answered ${a.status} in ${a.ms} ms`)
    expect(await p.stop()).toBe(0)
  }, 240_000)
})

async function timed(u: string) {
  const t0 = Date.now()
  const res = await fetch(u, { signal: AbortSignal.timeout(30_000) })
  const body = await res.text()
  return {
    status: res.status,
    body,
    ms: Date.now() - t0,
    retryAfter: res.headers.get('retry-after'),
  }
}
