import postgres from 'postgres'
import type { ChaosContext } from './context.ts'

// A fresh database per product run: a PGlite data directory in a temp dir, or a database
// of its own on the shared Postgres server (dropped at teardown, even after a failure).

export type Driver = 'pglite' | 'postgres'

export interface DbTarget {
  driver: Driver
  /** Environment for the CLI: DATABASE_URL or DATA_DIR. */
  env: Record<string, string>
  label: string
}

export const SERVER_URL =
  process.env.CHAOS_DATABASE_URL ??
  process.env.TEST_DATABASE_URL ??
  'postgres://postgres@127.0.0.1:5432/postgres'

let counter = 0

export async function freshDb(ctx: ChaosContext, driver: Driver): Promise<DbTarget> {
  if (driver === 'pglite') {
    const dir = ctx.tempDir('pglite')
    return { driver, env: { DATA_DIR: `${dir}/data` }, label: `PGlite in ${dir}` }
  }
  const name = `chaos_${process.pid}_${++counter}`
  await adminQuery(`CREATE DATABASE ${name}`)
  // Faults here hit the product, never this server, so a commit need not wait for the
  // WAL flush: on a shared, loaded machine that is most of a one-event-per-batch run.
  // (The private cluster of pg-outage, which is crashed, keeps the default.)
  await adminQuery(`ALTER DATABASE ${name} SET synchronous_commit = off`)
  ctx.defer(`drop database ${name}`, () =>
    adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  )
  const u = new URL(SERVER_URL)
  u.pathname = `/${name}`
  return { driver, env: { DATABASE_URL: u.toString() }, label: `Postgres database ${name}` }
}

async function adminQuery(sql: string): Promise<void> {
  const client = postgres(SERVER_URL, { max: 1, onnotice: () => {} })
  try {
    await client.unsafe(sql)
  } finally {
    await client.end({ timeout: 5 })
  }
}
