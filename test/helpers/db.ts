import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import { type Database, openDatabase } from '../../src/db/client.ts'

/**
 * A migrated, empty database for one test file: PGlite in memory by default, or a fresh
 * database on the server named by TEST_DATABASE_URL (dropped again by `close`).
 */
export async function createTestDatabase(): Promise<Database> {
  const serverUrl = process.env.TEST_DATABASE_URL
  if (!serverUrl) {
    const db = await openDatabase({ url: null, dataDir: null })
    await db.migrate()
    return db
  }
  const name = `pav_test_${process.pid}_${Math.random().toString(36).slice(2, 10)}`
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} })
  await admin.unsafe(`CREATE DATABASE ${name}`)
  await admin.end()
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  const db = await openDatabase({ url: url.toString(), dataDir: null, maxConnections: 4 })
  await db.migrate()
  return {
    ...db,
    close: async () => {
      await db.close()
      const drop = postgres(serverUrl, { max: 1, onnotice: () => {} })
      await drop.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await drop.end()
    },
  }
}

export const usingPostgres = (): boolean => Boolean(process.env.TEST_DATABASE_URL)

/**
 * Empties every table of a migrated test database and restarts its sequences: the state of
 * a fresh one (the migrations insert no rows), without migrating again, which costs seconds
 * on PGlite. For files whose tests each want an empty database.
 */
export async function emptyDatabase(db: Database): Promise<void> {
  const tables = await db.rows<{ name: string }>(sql`SELECT quote_ident(tablename) AS name
    FROM pg_tables WHERE schemaname = 'public'`)
  if (tables.length === 0) return
  await db.rows(
    sql.raw(`TRUNCATE ${tables.map((t) => t.name).join(', ')} RESTART IDENTITY CASCADE`),
  )
}
