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
