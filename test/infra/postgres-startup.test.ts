import { createConnection, createServer, type Server, type Socket } from 'node:net'
import postgres from 'postgres'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { isConnectionError, isRetryable } from '../../src/faults/errors.ts'
import { usingPostgres } from '../helpers/db.ts'

// postgres.js runs a query of its own on a connection before the one waiting for it: the
// array types and domains (4.x: when the pool starts with `eager_types`, else the first
// time a query meets a type it does not know). postgres.js 3.4.9 dropped that query's
// promise, so when the connection died under it (a reset, a terminated backend: what
// `pg_ctl stop -m immediate` did to `run` in test/cli/db-outage.test.ts) the process got an
// unhandled rejection and exited (porsager/postgres#1192, #1205); and a backend terminated
// under it replayed its error onto the query after the reconnect (#1223). 4.2.0 has neither
// bug, unpatched. A proxy on loopback stands between the driver and the real server and
// does to the first connection, as the types query passes, what an outage does.

const TYPES_QUERY = "typcategory = 'A'"
/** The types query on the pool's first connection, before the query waiting for it. */
const AT_START = { eager_types: true }

type Fault = 'reset' | 'terminate'

interface Proxy {
  url: string
  /** Done to the next connection whose types query passes, then disarmed. */
  arm(fault: Fault): void
  /** How many types queries met a fault since the last `arm`. */
  faults: number
  close(): Promise<void>
}

async function startProxy(target: URL, admin: postgres.Sql): Promise<Proxy> {
  let armed: Fault | null = null
  let faults = 0
  const sockets = new Set<Socket>()
  const server: Server = createServer((client) => {
    const upstream = createConnection(Number(target.port || 5432), target.hostname)
    for (const s of [client, upstream]) {
      sockets.add(s)
      s.on('close', () => sockets.delete(s))
      s.on('error', () => {}) // the faults below are the point; each side just closes
    }
    upstream.pipe(client)
    // end, not destroy: what the server said last (its ErrorResponse) still reaches the driver.
    upstream.on('close', () => client.end())
    client.on('close', () => upstream.destroy())
    client.on('data', (chunk) => {
      const fault = armed
      if (!fault || !chunk.includes(TYPES_QUERY)) return void upstream.write(chunk)
      armed = null
      faults++
      // A reset: the kernel's RST, so the driver reads ECONNRESET.
      if (fault === 'reset') return void client.resetAndDestroy()
      // The real server's own: its backend says 57P01 and closes. The query is held back,
      // so the backend dies with it unanswered, as under pg_terminate_backend mid-query.
      admin`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE client_port = ${upstream.localPort as number}`.then(
        (rows) => rows.length === 1 || client.destroy(new Error('no backend to terminate')),
        (err) => client.destroy(err),
      )
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  const port = (server.address() as { port: number }).port
  const url = new URL(target)
  url.hostname = '127.0.0.1'
  url.port = String(port)
  return {
    url: url.toString(),
    arm: (fault) => {
      armed = fault
      faults = 0
    },
    get faults() {
      return faults
    },
    close: async () => {
      for (const s of sockets) s.destroy()
      await new Promise<void>((r) => server.close(() => r()))
    },
  }
}

describe.skipIf(!usingPostgres())('a connection lost during its startup types query', () => {
  const target = new URL(process.env.TEST_DATABASE_URL ?? 'postgres://unused')
  let admin: postgres.Sql
  let proxy: Proxy
  const unhandled: unknown[] = []
  const onUnhandled = (reason: unknown) => unhandled.push(reason)

  beforeAll(async () => {
    admin = postgres(target.toString(), { max: 1, onnotice: () => {} })
    proxy = await startProxy(target, admin)
    process.on('unhandledRejection', onUnhandled)
  })
  afterAll(async () => {
    process.off('unhandledRejection', onUnhandled)
    await proxy?.close()
    await admin?.end()
  })
  afterEach(() => {
    unhandled.length = 0
  })

  /** Long enough for a dropped promise's rejection to be reported. */
  const settle = () => new Promise((r) => setTimeout(r, 200))

  it('reset: the waiting query fails as a lost connection (retryable), nothing escapes, the next query works', async () => {
    const sql = postgres(proxy.url, { ...AT_START, max: 1, onnotice: () => {}, connect_timeout: 5 })
    try {
      proxy.arm('reset')
      const first = await sql`SELECT 1 AS x`.then(
        () => null,
        (err: NodeJS.ErrnoException) => err,
      )
      expect(proxy.faults).toBe(1)
      expect(first).toBeInstanceOf(Error)
      expect(isConnectionError(first)).toBe(true)
      expect(isRetryable(first)).toBe(true)
      await settle()
      expect(unhandled).toEqual([])
      // A fresh connection, whose types query went through: arrays are parsed.
      expect(await sql`SELECT ARRAY[1, 2]::int[] AS a`).toEqual([{ a: [1, 2] }])
    } finally {
      await sql.end({ timeout: 5 })
    }
  })

  // 3.4.9 patched ran the waiting query on the reconnect; 4.2.0 fails it with the server's
  // 57P01, a lost connection the callers retry (db/retry.ts). What must not happen is the
  // old error replayed onto the next query (#1223).
  it('terminated backend: the waiting query fails with its 57P01 (retryable), the next query runs', async () => {
    const sql = postgres(proxy.url, { ...AT_START, max: 1, onnotice: () => {}, connect_timeout: 5 })
    try {
      proxy.arm('terminate')
      const first = await sql`SELECT 1 AS x`.then(
        () => null,
        (err: unknown) => err,
      )
      expect(proxy.faults).toBe(1)
      expect(first).toMatchObject({ code: '57P01' })
      expect(isConnectionError(first)).toBe(true)
      await settle()
      expect(unhandled).toEqual([])
      expect(await sql`SELECT ARRAY[1, 2]::int[] AS a`).toEqual([{ a: [1, 2] }])
    } finally {
      await sql.end({ timeout: 5 })
    }
  })
})

// The same stale error, after startup: a backend terminated under a running query (what an
// outage does to every busy connection) said 57P01 and closed, and postgres.js 3.4.9 kept
// that query and the error in the connection. The next query on it, once the reconnect's
// startup reached ReadyForQuery, failed with the old 57P01 although the server was up
// (issue 28: reads answering 503 after the database was back; porsager/postgres#1130 and
// the "any kill during a query" case in PR #1215's thread). 57P03, met by a connection that
// starts while the server recovers, was kept and replayed the same way.
describe.skipIf(!usingPostgres())('a backend terminated under a running query', () => {
  it('fails that query (retryable), and the next query on the connection runs', async () => {
    const url = process.env.TEST_DATABASE_URL as string
    const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 5 })
    const admin = postgres(url, { max: 1, onnotice: () => {} })
    try {
      const [{ pid }] = await sql<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`
      const running = sql`SELECT pg_sleep(30)`.then(
        () => null,
        (err: { code?: string }) => err,
      )
      await waitForActivity(admin, pid)
      await admin`SELECT pg_terminate_backend(${pid})`
      expect(isRetryable(await running)).toBe(true)
      // The same connection (max: 1) on a new socket: the server is up, so the query runs.
      const [{ other }] = await sql<{ other: number }[]>`SELECT pg_backend_pid() AS other`
      expect(other).not.toBe(pid)
      expect(await sql`SELECT ARRAY[1, 2]::int[] AS a`).toEqual([{ a: [1, 2] }])
    } finally {
      await sql.end({ timeout: 5 })
      await admin.end({ timeout: 5 })
    }
  })
})

/** Until backend `pid` runs its query (pg_sleep), so the termination lands under it. */
async function waitForActivity(admin: postgres.Sql, pid: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const rows = await admin`SELECT 1 FROM pg_stat_activity
      WHERE pid = ${pid} AND state = 'active' AND query LIKE '%pg_sleep%'`
    if (rows.length === 1) return
    await new Promise((r) => setTimeout(r, 20))
  }
  throw new Error(`backend ${pid} never ran its query`)
}
