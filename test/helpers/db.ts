import { sql } from 'drizzle-orm'
import { type Database, openDatabase } from '../../src/db/client.ts'
import { createTempDatabase } from './pg-cluster.ts'

/**
 * A migrated, empty database for one test file: PGlite in memory by default, or a fresh
 * database on the server named by TEST_DATABASE_URL (dropped again by `close`).
 */
export async function createTestDatabase(): Promise<Database> {
  const serverUrl = process.env.TEST_DATABASE_URL
  if (!serverUrl) return pooledPglite()
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

// Opening a PGlite instance costs about a second of CPU, and a worker's test files share
// its modules (isolate: false), so a closed test database goes back to its worker's pool,
// emptied, unless its schema or session was changed; the next file takes it from there.
const idle: Database[] = []
let freshSchema: string | null = null

async function pooledPglite(): Promise<Database> {
  const db = idle.pop() ?? (await openMigratedPglite())
  const removers = new Set<() => void>()
  let closed = false
  return {
    ...db,
    onCommit(listener) {
      const remove = db.onCommit(listener)
      removers.add(remove)
      return () => {
        removers.delete(remove)
        remove()
      }
    },
    close: async () => {
      if (closed) return
      closed = true
      for (const remove of removers) remove()
      if (await reusable(db)) idle.push(db)
      else await db.close()
    },
  }
}

async function openMigratedPglite(): Promise<Database> {
  const db = await openDatabase({ url: null, dataDir: null })
  await db.migrate()
  freshSchema ??= await schemaFingerprint(db)
  return db
}

/** Empties `db` for the next file; false when it cannot serve as a fresh one any more. */
async function reusable(db: Database): Promise<boolean> {
  try {
    // Fails inside a transaction a test left open, as it should.
    await db.rows(sql`DISCARD ALL`)
    if ((await schemaFingerprint(db)) !== freshSchema) return false
    await emptyDatabase(db)
    return true
  } catch {
    return false
  }
}

/** What migrations make: relations, columns, indexes, constraints, triggers and functions. */
async function schemaFingerprint(db: Database): Promise<string> {
  const [row] = await db.rows<{ f: string }>(sql`SELECT md5(string_agg(d, E'\n' ORDER BY d)) AS f
    FROM (
      SELECT format('%s.%s %s', n.nspname, c.relname, c.relkind) AS d
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname IN ('public', 'drizzle')
      UNION ALL
      SELECT format('%s.%s %s %s %s', c.relname, a.attname, format_type(a.atttypid, a.atttypmod),
        a.attnotnull, pg_get_expr(ad.adbin, ad.adrelid))
      FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
      JOIN pg_namespace n ON n.oid = c.relnamespace
      LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
      WHERE n.nspname IN ('public', 'drizzle') AND a.attnum > 0 AND NOT a.attisdropped
      UNION ALL
      SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i
      JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname IN ('public', 'drizzle')
      UNION ALL
      SELECT conname || pg_get_constraintdef(oid) FROM pg_constraint
      WHERE connamespace = 'public'::regnamespace
      UNION ALL
      SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal
      UNION ALL
      SELECT p.proname || md5(p.prosrc) FROM pg_proc p
      WHERE p.pronamespace = 'public'::regnamespace
      UNION ALL
      SELECT 'migrations ' || count(*) FROM drizzle.__drizzle_migrations
    ) s`)
  return row.f
}

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
