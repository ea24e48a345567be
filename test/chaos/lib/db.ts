import postgres from 'postgres'
import { createTempDatabase } from '../../helpers/pg-cluster.ts'
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

export async function freshDb(ctx: ChaosContext, driver: Driver): Promise<DbTarget> {
  if (driver === 'pglite') {
    const dir = ctx.tempDir('pglite')
    return { driver, env: { DATA_DIR: `${dir}/data` }, label: `PGlite in ${dir}` }
  }
  const db = await createTempDatabase(SERVER_URL, 'chaos')
  // Faults here hit the product, never this server, so a commit need not wait for the
  // WAL flush: on a shared, loaded machine that is most of a one-event-per-batch run.
  // (The private cluster of pg-outage, which is crashed, keeps the default.)
  await adminQuery(`ALTER DATABASE ${db.name} SET synchronous_commit = off`)
  ctx.defer(`drop database ${db.name}`, () => db.drop())
  return { driver, env: { DATABASE_URL: db.url }, label: `Postgres database ${db.name}` }
}

async function adminQuery(sql: string): Promise<void> {
  const client = postgres(SERVER_URL, { max: 1, onnotice: () => {} })
  try {
    await client.unsafe(sql)
  } finally {
    await client.end({ timeout: 5 })
  }
}
