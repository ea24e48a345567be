import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { PGlite } from '@electric-sql/pglite'
import { fillPlaceholders, type Query, type SQL, sql } from 'drizzle-orm'
import { type PgDatabase, PgDialect, type PgQueryResultHKT } from 'drizzle-orm/pg-core'
import { backoffMs } from '../faults/backoff.ts'
import { DataDirError } from '../faults/errors.ts'
import { lockDataDir } from './data-dir-lock.ts'
import { extractTemplate, readTemplate, templateNeeded } from './pglite-template.ts'
import { decodeRawRow, type RawColumn } from './raw-rows.ts'
import { readAgainIfConnectionLost } from './retry.ts'
import * as schema from './schema.ts'

export type Orm = PgDatabase<PgQueryResultHKT, typeof schema>
/** The ORM or a transaction on it: anything that can run a statement. */
export type Executor = Pick<Orm, 'execute' | 'select' | 'insert' | 'update' | 'delete'>

export interface ReadOptions {
  /**
   * The values of the query's `sql.placeholder`s. A query with placeholders is built once
   * (a module constant) and rendered to text once per database, not on every run: building
   * and rendering the lookup's SQL was the largest allocation of a request. On Postgres
   * such a statement is also planned once, generically (see openPostgres).
   */
  values?: Record<string, unknown>
  /**
   * Columns that come back as the UTF-8 bytes of their text, never decoded to a string (see
   * raw-rows.ts). On Postgres they view the driver's receive buffer: copy what you keep.
   */
  bytes?: ReadonlySet<string>
}

export interface Database {
  readonly kind: 'postgres' | 'pglite'
  readonly orm: Orm
  migrate(): Promise<void>
  /** True when every migration in drizzle/ has been applied (a `serve` process checks). */
  isMigrated(): Promise<boolean>
  /**
   * Runs a raw statement and returns its rows, whatever the driver. Without an executor it
   * is a read of its own, run once more if its connection was lost (see `read`).
   */
  rows<T = Record<string, unknown>>(query: SQL, executor?: Executor): Promise<T[]>
  /**
   * Runs a read of a fixed shape as a named prepared statement on Postgres: drizzle's
   * `execute` sends an unnamed one, which postgres.js describes first (one round trip for the
   * parameter types, one for the rows); prepared, every later run is one round trip. Each
   * distinct SQL text is kept per connection, so only for statements whose text does not
   * vary with their input (values as parameters, no lists spliced in). PGlite: as `rows`.
   * See ReadOptions for statements built once and for columns read as bytes. A read whose
   * connection was lost runs once more on a fresh one (retry.ts readAgainIfConnectionLost).
   */
  read<T = Record<string, unknown>>(query: SQL, o?: ReadOptions): Promise<T[]>
  /**
   * The ORM on a connection of its own (Postgres; PGlite has one), for the answer cache's
   * poll of the change log: queued behind a saturated pool, the poll would come too late and
   * the cache would stop serving exactly when it is needed most.
   */
  readonly monitor: Orm
  ping(): Promise<boolean>
  close(): Promise<void>
  /**
   * Runs `work` in one transaction; when it ends (committed or not), before the caller
   * resumes, every `onCommit` listener is called.
   */
  transaction<T>(work: (tx: Transaction) => Promise<T>): Promise<T>
  /**
   * Calls `listener` each time a transaction of this process (`transaction`) ends, before
   * its caller resumes: in-process caches distrust themselves at once. Returns the remover.
   */
  onCommit(listener: () => void): () => void
}

/** A transaction on the ORM, as `Database.transaction` hands it to its work. */
export type Transaction = Parameters<Parameters<Orm['transaction']>[0]>[0]

/** `transaction` and `onCommit` of a Database on `orm`. */
function transactions(orm: Orm): Pick<Database, 'transaction' | 'onCommit'> {
  const listeners = new Set<() => void>()
  return {
    async transaction(work) {
      try {
        return await orm.transaction(work)
      } finally {
        for (const listener of listeners) listener()
      }
    },
    onCommit(listener) {
      listeners.add(listener)
      return () => void listeners.delete(listener)
    },
  }
}

export const MIGRATIONS_DIR = fileURLToPath(new URL('../../drizzle', import.meta.url))

export interface DatabaseOptions {
  /** Postgres URL; null for embedded PGlite. */
  url: string | null
  /** PGlite directory; null keeps PGlite in memory (tests). */
  dataDir: string | null
  maxConnections?: number
  /** Postgres schema to use (tests isolate themselves with it). */
  searchPath?: string
  /** PGlite's shared_buffers (a Postgres memory size); default PGLITE_SHARED_BUFFERS. */
  sharedBuffers?: string
}

const MIGRATION_COUNT: number = JSON.parse(
  readFileSync(join(MIGRATIONS_DIR, 'meta/_journal.json'), 'utf8'),
).entries.length

async function appliedMigrations(executor: Executor, schema: string): Promise<number> {
  try {
    const rows = await rowsOf<{ n: number }>(
      executor,
      sql`SELECT count(*)::int AS n FROM ${sql.identifier(schema)}.__drizzle_migrations`,
    )
    return Number(rows[0]?.n ?? 0)
  } catch {
    return 0 // no migrations table yet
  }
}

/** PGlite's text of a `bytes` column, as the bytes Postgres would have sent. */
const bytesOf = (v: unknown): Buffer | null =>
  v === null || v === undefined ? null : Buffer.from(String(v))

async function rowsOf<T>(executor: Executor, query: SQL): Promise<T[]> {
  const result = (await executor.execute(query)) as unknown
  // postgres.js returns the rows array; PGlite returns { rows }.
  return (Array.isArray(result) ? result : (result as { rows: T[] }).rows) as T[]
}

// Each driver (and its half of drizzle) loads only with the first database of its kind:
// `serve` on Postgres never loads PGlite, a first start on PGlite never loads postgres.js.
export async function openDatabase(opts: DatabaseOptions): Promise<Database> {
  return opts.url
    ? openPostgres(opts.url, opts)
    : openPglite(opts.dataDir, opts.sharedBuffers ?? PGLITE_SHARED_BUFFERS)
}

/** Renders `sql` objects to text and parameters, as drizzle's own session does. */
const dialect = new PgDialect()

/** Renders each statement built once (ReadOptions.values) a single time per database. */
function renderCache(): (q: SQL) => Query {
  const rendered = new WeakMap<SQL, Query>()
  return (q) => {
    const known = rendered.get(q)
    if (known) return known
    const r = dialect.sqlToQuery(q)
    rendered.set(q, r)
    return r
  }
}

/**
 * How PGlite reads a statement built once: dates, times, intervals and numeric arrays as
 * the text Postgres sent, as drizzle's PGlite session reads every other statement
 * (drizzle-orm/pglite/session.js), so a read answers the same whichever path it took.
 */
type PgliteModule = typeof import('@electric-sql/pglite')

const pgliteRead = (types: PgliteModule['types']) => ({
  rowMode: 'object' as const,
  parsers: Object.fromEntries(
    [
      types.TIMESTAMP,
      types.TIMESTAMPTZ,
      types.INTERVAL,
      types.DATE,
      1231,
      1115,
      1185,
      1187,
      1182,
    ].map((oid) => [oid, (text: string) => text]),
  ),
})

/** Connections for statements built once; db/read/batch.ts runs at most 4 at a time. */
const BUILT_ONCE_CONNECTIONS = 4

async function openPostgres(url: string, opts: DatabaseOptions): Promise<Database> {
  const [{ default: postgres }, { drizzle: drizzlePostgres }] = await Promise.all([
    import('postgres'),
    import('drizzle-orm/postgres-js'),
  ])
  const options = {
    max: opts.maxConnections ?? 10,
    // While the server is unreachable, a query waits this long for a connection before it
    // fails (retryable): reads answer 503 after seconds, not the driver's default 30 s.
    connect_timeout: 5,
    // A query that arrives while the server is down waits for the pool's next reconnect
    // attempt, and postgres.js spaces those by 0.5-1 x min(3^failures / 100, 20) s: after a
    // few failed batches a read would wait up to 20 s for its 503. Our own retries (retry.ts)
    // pace the writer; reconnects to one server stay at most a second apart.
    // No jitter: one process, one server; postgres.js takes seconds.
    backoff: (failures: number) =>
      backoffMs(failures, { baseMs: 50, maxMs: 1000, jitter: 'none' }) / 1000,
    onnotice: () => {},
    connection: opts.searchPath ? { search_path: opts.searchPath } : {},
  }
  const client = postgres(url, options)
  const orm = drizzlePostgres(client, { schema }) as unknown as Orm
  // Statements built once (ReadOptions.values) are also planned once. Left to choose,
  // Postgres planned the prompt lookup afresh on every run: it estimates an unnest of a
  // parameter array at 10 keys, so the generic plan never looks cheaper than a custom one.
  // That planning (six relations, prompts' partial indexes three times) cost a backend
  // several times the CPU of running it (bench/README.md, "Lookups planned once"). The
  // plan is the same index probes whatever the keys. Its own few connections (the
  // lookups' batches run at most 4 statements at once), idle until the first such read.
  const builtOnce = postgres(url, {
    ...options,
    max: Math.min(BUILT_ONCE_CONNECTIONS, options.max),
    connection: { ...options.connection, plan_cache_mode: 'force_generic_plan' },
  })
  const renderOnce = renderCache()
  // Idle until the first poll: postgres.js connects lazily.
  const monitorClient = postgres(url, { ...options, max: 1 })
  const monitor = drizzlePostgres(monitorClient, { schema }) as unknown as Orm
  return {
    kind: 'postgres',
    orm,
    monitor,
    ...transactions(orm),
    migrate: async () => {
      const { migrate } = await import('drizzle-orm/postgres-js/migrator')
      await migrate(orm as never, {
        migrationsFolder: MIGRATIONS_DIR,
        migrationsSchema: opts.searchPath ?? 'drizzle',
      })
    },
    // In a transaction (an executor) a lost connection is the transaction's to handle.
    rows: (q, ex) => (ex ? rowsOf(ex, q) : readAgainIfConnectionLost(() => rowsOf(orm, q))),
    read: <T>(q: SQL, { values, bytes }: ReadOptions = {}) => {
      const { sql: text, params } = values ? renderOnce(q) : dialect.sqlToQuery(q)
      const args = values ? fillPlaceholders(params, values) : params
      const run = async () => {
        const query = (values ? builtOnce : client).unsafe(text, args as never[], { prepare: true })
        if (!bytes) return (await query) as unknown as T[]
        const rows = await query.raw()
        const columns = rows.columns as unknown as RawColumn[]
        return rows.map((row) => decodeRawRow<T>(row, columns, bytes))
      }
      return readAgainIfConnectionLost(run)
    },
    isMigrated: async () =>
      (await appliedMigrations(orm, opts.searchPath ?? 'drizzle')) >= MIGRATION_COUNT,
    ping: async () => {
      await client`select 1`
      return true
    },
    close: async () => {
      await Promise.all([client, monitorClient, builtOnce].map((c) => c.end({ timeout: 5 })))
    },
  }
}

/**
 * PGlite's buffer pool. Its own default (128 MB) was most of a small index's RSS; the
 * operating system's page cache holds the files anyway (bench/README.md, "PGlite's buffer
 * pool").
 */
export const PGLITE_SHARED_BUFFERS = '8MB'

/** Starts PGlite on `dataDir` (null: in memory), filled from the template when new. */
async function startPglite(
  { PGlite }: PgliteModule,
  dataDir: string | null,
  sharedBuffers: string,
): Promise<PGlite> {
  const pgdata = dataDir ? join(dataDir, 'pgdata') : null
  const fill = pgdata ? templateNeeded(pgdata) : null
  if (pgdata && fill?.needed) {
    // The marker first: a start that dies while extracting leaves it, and the next start
    // fills the directory again.
    writeFileSync(fill.marker, '')
    extractTemplate(pgdata)
  }
  try {
    const pg = new PGlite({
      dataDir: pgdata ?? undefined,
      loadDataDir: pgdata ? undefined : readTemplate(),
      startParams: [...PGlite.defaultStartParams, '-c', `shared_buffers=${sharedBuffers}`],
    })
    await pg.waitReady
    if (fill?.needed) rmSync(fill.marker, { force: true })
    return pg
  } catch (err) {
    throw new DataDirError(
      `PGlite could not open ${pgdata ?? 'an in-memory database'}: ${(err as Error).message}`,
      { cause: err },
    )
  }
}

async function openPglite(dataDir: string | null, sharedBuffers: string): Promise<Database> {
  const release = dataDir ? lockDataDir(dataDir) : () => {}
  let lib: PgliteModule
  let pg: PGlite
  try {
    lib = await import('@electric-sql/pglite')
    pg = await startPglite(lib, dataDir, sharedBuffers)
  } catch (err) {
    release()
    throw err
  }
  const { drizzle: drizzlePglite } = await import('drizzle-orm/pglite')
  const orm = drizzlePglite(pg, { schema }) as unknown as Orm
  const renderOnce = renderCache()
  const readOptions = pgliteRead(lib.types)
  return {
    kind: 'pglite',
    orm,
    monitor: orm,
    ...transactions(orm),
    migrate: async () => {
      const { migrate } = await import('drizzle-orm/pglite/migrator')
      await migrate(orm as never, { migrationsFolder: MIGRATIONS_DIR })
    },
    rows: (q, ex) => rowsOf(ex ?? orm, q),
    read: async <T>(q: SQL, { values, bytes }: ReadOptions = {}) => {
      const rendered = values ? renderOnce(q) : null
      const rows = rendered
        ? (
            await pg.query<Record<string, unknown>>(
              rendered.sql,
              fillPlaceholders(rendered.params, values!),
              readOptions,
            )
          ).rows
        : await rowsOf<Record<string, unknown>>(orm, q)
      if (bytes) for (const row of rows) for (const c of bytes) row[c] = bytesOf(row[c])
      return rows as T[]
    },
    isMigrated: async () => (await appliedMigrations(orm, 'drizzle')) >= MIGRATION_COUNT,
    ping: async () => {
      await pg.query('select 1')
      return true
    },
    close: async () => {
      try {
        await pg.close()
      } finally {
        release()
      }
    },
  }
}
