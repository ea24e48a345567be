import { sql } from 'drizzle-orm'
import { type Database, openDatabase } from '../../src/db/client.ts'
import { createTempDatabase } from './pg-cluster.ts'

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
  const temp = await createTempDatabase(serverUrl, 'pav_test')
  const db = await openDatabase({ url: temp.url, dataDir: null, maxConnections: 4 })
  await db.migrate()
  return {
    ...db,
    close: async () => {
      await db.close()
      await temp.drop()
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
