import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createGenerator, type JetstreamEvent } from '../../demo-network/generator.ts'
import {
  type JetstreamJson,
  type JetstreamServer,
  startJetstreamServer,
} from '../../demo-network/jetstream-server.ts'
import { openDatabase } from '../../src/db/client.ts'
import { type ServingCli, startServing, waitFor } from '../helpers/cli.ts'
import { type PgCluster, startPgCluster } from '../helpers/pg-cluster.ts'

// A database outage mid-ingest, from outside: a private cluster stopped with
// `pg_ctl stop -m immediate` (no checkpoint, every connection cut) three times while `run`
// writes. Each time the process must live (postgres.js 3.4.9 unpatched dies here of a
// TypeError from a deferred write), /readyz and reads must answer 503 naming the database,
// ingestion must wait and resume by itself, and the end state must equal an uninterrupted
// run's of the same events.

const N = 3000
const OUTAGES = 3
const dir = mkdtempSync(join(tmpdir(), 'pav-outage-'))
let cluster: PgCluster
let jetstream: JetstreamServer
let plc: Server
let plcUrl: string
let events: JetstreamEvent[]

beforeAll(async () => {
  cluster = await startPgCluster()
  const admin = postgres(cluster.url, { max: 1, onnotice: () => {} })
  await admin.unsafe('CREATE DATABASE outage')
  await admin.unsafe('CREATE DATABASE straight')
  await admin.end()
  events = createGenerator({
    seed: 9,
    dids: 20,
    contentBytes: { min: 1024, max: 4096 },
    realCids: false,
    startTimeUs: Date.now() * 1000 - 600_000_000,
  }).generate(N)
  // Paced, so the outages land mid-stream rather than after it.
  jetstream = await startJetstreamServer({ eventsPerSecond: 150 })
  // No DID is registered: handle checks fail fast, on loopback.
  plc = createServer((_req, res) => res.writeHead(404).end('{}'))
  await new Promise<void>((r) => plc.listen(0, '127.0.0.1', () => r()))
  plcUrl = `http://127.0.0.1:${(plc.address() as AddressInfo).port}`
}, 120_000)

afterAll(async () => {
  await jetstream?.close()
  plc?.close()
  await cluster?.destroy()
  rmSync(dir, { recursive: true, force: true })
})

const dbUrl = (name: string) => cluster.url.replace(/\/postgres$/, `/${name}`)

async function cursorOf(name: string): Promise<number> {
  const c = postgres(dbUrl(name), { max: 1, onnotice: () => {}, connect_timeout: 2 })
  try {
    const rows = await c<{ cursor: string }[]>`SELECT cursor FROM ingest_cursors`
    return rows.length ? Number(rows[0].cursor) : 0
  } finally {
    await c.end()
  }
}

async function dump(name: string) {
  const db = await openDatabase({ url: dbUrl(name), dataDir: null, maxConnections: 1 })
  try {
    const out: Record<string, unknown> = {}
    for (const t of ['prompts', 'conversations', 'agents']) {
      out[t] = await db.rows(
        sql`SELECT did, rkey, rev, cid, deleted, hidden, ${t === 'prompts' ? sql`flags, recompiles` : sql`0 AS flags, 0 AS recompiles`}
            FROM ${sql.raw(t)} ORDER BY did, rkey`,
      )
    }
    out.accounts = await db.rows(sql`SELECT did, active, status FROM accounts ORDER BY did`)
    return out
  } finally {
    await db.close()
  }
}

async function timed(url: string) {
  const t0 = performance.now()
  const res = await fetch(url)
  return { status: res.status, body: await res.json(), ms: performance.now() - t0 }
}

/**
 * `wait`, failing at once if a process dies meanwhile, with its error and fatal log lines
 * (pino levels 50 and 60: why it died, which the tail alone can miss behind the lines its
 * shutdown logs) and its last words.
 */
async function whileAlive<T>(procs: ServingCli[], wait: Promise<T>): Promise<T> {
  const died = procs.map((p) =>
    p.exited.then((code): never => {
      const out = p.output()
      const errors = out.split('\n').filter((l) => /"level":(50|60)\b/.test(l))
      throw new Error(
        `a process exited (${code}) during the outages; its errors:\n${errors.join('\n').slice(-6000)}\nits last words:\n${out.slice(-3000)}`,
      )
    }),
  )
  return Promise.race([wait, ...died])
}

async function outage(cli: ServingCli, serve: ServingCli, k: number): Promise<void> {
  await waitFor(`progress before outage ${k}`, async () => jetstream.sent >= (k * N) / 5, 120_000)
  await cluster.stopImmediate()
  const ready = await waitFor(
    `/readyz 503 in outage ${k}`,
    async () => {
      const r = await timed(`${cli.url}/readyz`)
      return r.status === 503 ? r : null
    },
    30_000,
  )
  expect(ready.body).toEqual({ ok: false, reason: expect.stringMatching(/^database unavailable/) })
  const read = await timed(`${cli.url}/v1/prompts?limit=1`)
  expect(read.status).toBe(503)
  expect(read.body).toEqual({
    error: 'ServiceUnavailable',
    message: expect.stringMatching(/^database unavailable/),
  })
  // An answer, not the 15 s handler timeout or a hang: the driver's connect timeout is 5 s.
  expect(read.ms).toBeLessThan(10_000)
  // A reader on the same database (`serve`, no ingest) says the same.
  const served = await timed(`${serve.url}/v1/stats`)
  expect(served.status).toBe(503)
  expect(served.body).toMatchObject({ error: 'ServiceUnavailable' })
  // Down for a while: every batch attempt fails and is retried meanwhile.
  await new Promise((r) => setTimeout(r, 2000))
  expect(cli.child.exitCode).toBeNull()
  expect(serve.child.exitCode).toBeNull()
  // After those failures too: postgres.js's own reconnect backoff grows with each failed
  // connect (up to 20 s by default), and a read waits for the next attempt.
  const later = await timed(`${cli.url}/v1/prompts?limit=1`)
  expect(later.status).toBe(503)
  expect(later.ms).toBeLessThan(10_000)
  await cluster.start()
  for (const p of [cli, serve]) {
    await waitFor(
      `/readyz 200 after outage ${k}`,
      async () => (await timed(`${p.url}/readyz`)).status === 200,
      60_000,
    )
  }
}

describe('database outage mid-ingest (private cluster, pg_ctl stop -m immediate)', () => {
  it('survives every outage, answers 503 meanwhile, resumes, and loses nothing', async () => {
    const last = events[N - 1].time_us
    const cli = await startServing(['run'], {
      DATABASE_URL: dbUrl('outage'),
      JETSTREAM_URL: jetstream.url,
      PLC_URL: plcUrl,
      RATE_LIMIT_PER_MINUTE: '1000000',
      BATCH_SIZE: '50',
    })
    // `run` migrated the database: a reader process beside it.
    const serve = await startServing(['serve'], {
      DATABASE_URL: dbUrl('outage'),
      RATE_LIMIT_PER_MINUTE: '1000000',
    })
    try {
      await waitFor('the connection', async () => jetstream.connections > 0)
      jetstream.append(events as unknown as JetstreamJson[])
      for (let k = 1; k <= OUTAGES; k++) await whileAlive([cli, serve], outage(cli, serve, k))
      await whileAlive(
        [cli, serve],
        waitFor('every event committed', async () => (await cursorOf('outage')) === last, 180_000),
      )
      expect(cli.child.exitCode).toBeNull()
      expect(cli.output()).toMatch(/batch failed, retrying/)
      expect(cli.output()).not.toMatch(/Cannot read properties of null/)
    } finally {
      cli.child.kill('SIGTERM')
      serve.child.kill('SIGTERM')
    }
    expect(await cli.exited).toBe(0)
    expect(await serve.exited).toBe(0)

    // The same events, uninterrupted, from a replay file into a second database.
    const file = join(dir, 'events.ndjson')
    writeFileSync(file, `${events.map((e) => JSON.stringify(e)).join('\n')}\n`)
    const straight = await startServing(['run', '--source', 'replay', '--replay-file', file], {
      DATABASE_URL: dbUrl('straight'),
      PLC_URL: plcUrl,
    })
    try {
      await waitFor('the replay', async () => (await cursorOf('straight')) === last, 180_000)
    } finally {
      straight.child.kill('SIGTERM')
    }
    expect(await straight.exited).toBe(0)
    const [got, want] = [await dump('outage'), await dump('straight')]
    expect((want.prompts as unknown[]).length).toBeGreaterThan(100)
    expect(got).toEqual(want)
  }, 600_000)
})
