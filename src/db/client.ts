import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import type { Query, SQL } from 'drizzle-orm'
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core'
import type { Logger } from 'pino'
import { backoffMs } from '../faults/backoff.ts'
import { DataDirError } from '../faults/errors.ts'
import { lockDataDir } from './data-dir-lock.ts'
import { drivers, is, PgDialect, Placeholder, sql } from './orm.ts'
import { type GuardedPglite, guardPglite, type PgliteModule, roomCheck } from './pglite-guard.ts'
import { extractTemplate, readTemplate, templateNeeded } from './pglite-template.ts'
import { readAgainIfConnectionLost } from './retry.ts'
import * as schema from './schema.ts'

export type Orm = PgDatabase<PgQueryResultHKT, typeof schema>
/** The ORM or a transaction on it: what every query function of db/ takes to run on. */
export type Executor = Pick<Orm, 'execute' | 'select' | 'insert' | 'update' | 'delete' | '$count'>

export interface Database {
  readonly kind: 'postgres' | 'pglite'
  /** The ORM on the pool: for db/ only (dependency-cruiser keeps drizzle there). */
  readonly orm: Orm
  /**
   * The ORM on a connection of its own, for the change log's polls: behind a saturated pool
   * a poll comes late just when the caches need it most. For db/ only.
   */
  readonly monitor: Orm
  migrate(): Promise<void>
  /** True when every migration in drizzle/ has been applied (a `serve` process checks). */
  isMigrated(): Promise<boolean>
  /** A raw read on the pool (`rows` on `orm`), run once more if its connection was lost. */
  rows<T = Record<string, unknown>>(query: SQL): Promise<T[]>
  /**
   * A read of fixed SQL text (a prepared statement on Postgres), `values` filling its
   * `sql.placeholder`s; run once more if its connection was lost.
   */
  read<T = Record<string, unknown>>(query: SQL, values?: Record<string, unknown>): Promise<T[]>
  ping(): Promise<boolean>
  close(): Promise<void>
  /** Runs `work` in one transaction, then, if it committed, every `onCommit` listener. */
  transaction<T>(work: (tx: Executor) => Promise<T>): Promise<T>
  /**
   * Calls `listener` after each commit of `transaction`, before its caller resumes, so
   * in-process caches distrust themselves at once. Returns the remover.
   */
  onCommit(listener: () => void): () => void
}

/** Runs a raw statement on `ex` and returns its rows: the one way db/ runs raw SQL. */
export async function rows<T = Record<string, unknown>>(ex: Executor, query: SQL): Promise<T[]> {
  const result = (await ex.execute(query)) as unknown
  // postgres.js returns the rows array; PGlite returns { rows }.
  return (Array.isArray(result) ? result : (result as { rows: T[] }).rows) as T[]
}

/**
 * `transaction` and `onCommit` of a Database on the ORM `current()` returns; `before` runs
 * first (PGlite checks its free space there, Postgres lifts the read timeout inside).
 */
function transactions(
  current: () => Orm,
  before: () => Promise<void> = async () => {},
  first: SQL | null = null,
): Pick<Database, 'transaction' | 'onCommit'> {
  const listeners = new Set<() => void>()
  return {
    async transaction(work) {
      await before()
      const result = await current().transaction(async (tx) => {
        if (first) await tx.execute(first)
        return work(tx)
      })
      for (const listener of listeners) listener()
      return result
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
  /** PGlite: free bytes kept under the data directory; a write transaction below it waits. */
  minFreeBytes?: number
  /** Postgres: statement_timeout (ms) of every statement but those of write transactions. */
  readTimeoutMs?: number
  /** Told when PGlite stopped on a PANIC and when it was reopened (for the log). */
  logger?: Logger
}

const MIGRATION_COUNT: number = JSON.parse(
  readFileSync(join(MIGRATIONS_DIR, 'meta/_journal.json'), 'utf8'),
).entries.length

async function appliedMigrations(executor: Executor, schema: string): Promise<number> {
  try {
    const [r] = await rows<{ n: number }>(
      executor,
      sql`SELECT count(*)::int AS n FROM ${sql.identifier(schema)}.__drizzle_migrations`,
    )
    return Number(r?.n ?? 0)
  } catch {
    return 0 // no migrations table yet
  }
}

// Each driver (and its half of drizzle) loads only with the first database of its kind:
// `serve` on Postgres never loads PGlite, a first start on PGlite never loads postgres.js.
export async function openDatabase(opts: DatabaseOptions): Promise<Database> {
  return opts.url ? openPostgres(opts.url, opts) : openPglite(opts)
}

/** Renders `sql` objects to text and parameters, as drizzle's own session does. */
const dialect = new PgDialect()

/**
 * A statement's text and parameters, `sql.placeholder`s filled from `values`: a query built
 * once is rendered once per database, so its text is the same every run.
 */
function renderer(): (q: SQL, values?: Record<string, unknown>) => Query {
  const rendered = new Map<SQL, Query>()
  return (q, values) => {
    if (!values) return dialect.sqlToQuery(q)
    const once = rendered.get(q) ?? dialect.sqlToQuery(q)
    rendered.set(q, once)
    return {
      sql: once.sql,
      params: once.params.map((p) => (is(p, Placeholder) ? values[p.name] : p)),
    }
  }
}

/** Connections for reads built once; db/read/batch.ts runs at most 4 at a time. */
const BUILT_ONCE_CONNECTIONS = 4

type PostgresOptions = import('postgres').Options<Record<string, never>>

function postgresOptions(opts: DatabaseOptions): PostgresOptions {
  return {
    max: opts.maxConnections ?? 10,
    // While the server is unreachable, a query waits this long for a connection before it
    // fails (retryable): reads answer 503 after seconds, not the driver's default 30 s.
    connect_timeout: 5,
    // The driver's own reconnect backoff grows to 20 s; our retries (retry.ts) pace the
    // writer, so reconnects to one server stay at most a second apart and reads answer soon.
    backoff: (failures: number) =>
      backoffMs(failures, { baseMs: 50, maxMs: 1000, jitter: 'none' }) / 1000,
    onnotice: () => {},
    connection: {
      ...(opts.searchPath ? { search_path: opts.searchPath } : {}),
      // Reads are cut at the read timeout (a 503 with Retry-After, never a hung socket);
      // write transactions lift it for themselves (WRITES_UNBOUNDED), migrations run without.
      ...(opts.readTimeoutMs ? { statement_timeout: opts.readTimeoutMs } : {}),
    },
  }
}

/** A batch may wait on a lock or a slow disk as long as it needs: only reads are bounded. */
const WRITES_UNBOUNDED = sql`SET LOCAL statement_timeout = 0`

async function openPostgres(url: string, opts: DatabaseOptions): Promise<Database> {
  const { default: postgres } = await import('postgres')
  const { drizzle } = drivers.postgres()
  const options = postgresOptions(opts)
  const client = postgres(url, options)
  const orm = drizzle(client, { schema }) as unknown as Orm
  // Reads built once are planned once, generically: left to choose, Postgres re-planned the
  // prompt lookup on every run at more CPU than the run itself (bench/README.md).
  const generic = postgres(url, {
    ...options,
    max: Math.min(BUILT_ONCE_CONNECTIONS, options.max ?? 10),
    connection: { ...options.connection, plan_cache_mode: 'force_generic_plan' },
  })
  // Handed to drizzle as the pool is, so it reads and writes each type as the pool does.
  drizzle(generic, { schema })
  const monitorClient = postgres(url, { ...options, max: 1 })
  const render = renderer()
  return {
    kind: 'postgres',
    orm,
    monitor: drizzle(monitorClient, { schema }) as unknown as Orm,
    ...transactions(() => orm, undefined, opts.readTimeoutMs ? WRITES_UNBOUNDED : null),
    migrate: async () => {
      const { migrate } = drivers.postgresMigrator()
      // A connection of its own without the read timeout: building an index takes its time.
      const { statement_timeout: _, ...connection } = options.connection ?? {}
      const once = postgres(url, { ...options, max: 1, connection })
      try {
        await migrate(drizzle(once, { schema }) as never, {
          migrationsFolder: MIGRATIONS_DIR,
          migrationsSchema: opts.searchPath ?? 'drizzle',
        })
      } finally {
        await once.end({ timeout: 5 })
      }
    },
    rows: (q) => readAgainIfConnectionLost(() => rows(orm, q)),
    read: <T>(q: SQL, values?: Record<string, unknown>) => {
      const { sql: text, params } = render(q, values)
      const pool = values ? generic : client
      return readAgainIfConnectionLost(
        async () =>
          (await pool.unsafe(text, params as never[], { prepare: true })) as unknown as T[],
      )
    },
    isMigrated: async () =>
      (await appliedMigrations(orm, opts.searchPath ?? 'drizzle')) >= MIGRATION_COUNT,
    ping: async () => {
      await client`select 1`
      return true
    },
    close: async () => {
      await Promise.all([client, monitorClient, generic].map((c) => c.end({ timeout: 5 })))
    },
  }
}

/** PGlite's buffer pool: small, since the OS page cache holds the files anyway (bench/README.md). */
export const PGLITE_SHARED_BUFFERS = '8MB'

interface PgliteStart {
  mod: PgliteModule
  dataDir: string | null
  sharedBuffers: string
  onPanic: (err: unknown) => void
}

/** Starts PGlite on `dataDir` (null: in memory), filled from the template when new. */
async function startPglite({ mod, dataDir, sharedBuffers, onPanic }: PgliteStart) {
  const pgdata = dataDir ? join(dataDir, 'pgdata') : null
  const fill = pgdata ? templateNeeded(pgdata) : null
  if (pgdata && fill?.needed) {
    // The marker first: a start that dies while extracting leaves it, and the next start
    // fills the directory again.
    writeFileSync(fill.marker, '')
    extractTemplate(pgdata)
  }
  try {
    const Guarded = guardPglite(mod, onPanic)
    const pg = new Guarded({
      dataDir: pgdata ?? undefined,
      loadDataDir: pgdata ? undefined : readTemplate(),
      startParams: [...mod.PGlite.defaultStartParams, '-c', `shared_buffers=${sharedBuffers}`],
    })
    await pg.waitReady
    if (fill?.needed) rmSync(fill.marker, { force: true })
    return pg
  } catch (err) {
    throw new DataDirError(
      `PGlite could not open ${pgdata ?? 'an in-memory database'}: ${(err as Error).message}. ` +
        'If the disk is full, free some space and start again; if it still does not open, ' +
        'move the directory aside and restore it from your last copy, or index again from the ' +
        'source into a new one (prompt-appview run --data-dir <new directory>)',
      { cause: err },
    )
  }
}

async function openPglite(opts: DatabaseOptions): Promise<Database> {
  const { dataDir } = opts
  const release = dataDir ? lockDataDir(dataDir) : () => {}
  const mod = await import('@electric-sql/pglite')
  const start = {
    mod,
    dataDir,
    sharedBuffers: opts.sharedBuffers ?? PGLITE_SHARED_BUFFERS,
    // Set once the instance is in use: a PANIC while opening fails the open (DataDirError).
    onPanic: (err: unknown) => void reopen?.(err),
  }
  let reopen: ((panic: unknown) => Promise<void>) | null = null
  let pg: GuardedPglite
  try {
    pg = await startPglite(start)
  } catch (err) {
    release()
    throw err
  }
  const { drizzle } = drivers.pglite()
  let orm = drizzle(pg, { schema }) as unknown as Orm
  const render = renderer()
  const hasRoom = roomCheck(dataDir, opts.minFreeBytes ?? 0)
  let closed = false
  // After a PANIC the instance is dead: a fresh one on the same directory replaces it.
  reopen = (panic: unknown) =>
    reopenAfterPanic(panic, {
      logger: opts.logger,
      dataDir,
      open: async () => {
        await hasRoom()
        return startPglite(start)
      },
      closed: () => closed,
      swap: (fresh) => {
        pg = fresh
        orm = drizzle(fresh, { schema }) as unknown as Orm
      },
    })
  return {
    kind: 'pglite',
    get orm() {
      return orm
    },
    get monitor() {
      return orm
    },
    ...transactions(() => orm, hasRoom),
    migrate: async () => {
      const { migrate } = drivers.pgliteMigrator()
      await migrate(orm as never, { migrationsFolder: MIGRATIONS_DIR })
    },
    rows: (q) => rows(orm, q),
    read: async <T>(q: SQL, values?: Record<string, unknown>) => {
      if (!values) return rows<T>(orm, q)
      const { sql: text, params } = render(q, values)
      return (await pg.query<T>(text, params, { rowMode: 'object' })).rows
    },
    isMigrated: async () => (await appliedMigrations(orm, 'drizzle')) >= MIGRATION_COUNT,
    ping: async () => {
      await pg.query('select 1')
      return true
    },
    close: async () => {
      closed = true
      try {
        // A dead instance is left alone: closing it runs a statement, which would spin.
        if (!pg.panic) await pg.close()
      } finally {
        release()
      }
    },
  }
}

/**
 * Opens the data directory again until it opens (crash recovery needs room to write, so
 * that may take until the disk has space again), then hands the fresh instance to `swap`.
 */
async function reopenAfterPanic(
  panic: unknown,
  o: {
    logger: Logger | undefined
    dataDir: string | null
    open: () => Promise<GuardedPglite>
    closed: () => boolean
    swap: (fresh: GuardedPglite) => void
  },
): Promise<void> {
  o.logger?.error(
    { err: panic, dataDir: o.dataDir },
    'PGlite stopped on a PANIC: opening its data directory again (reads answer 503 meanwhile)',
  )
  // An in-memory database has nothing to open again: it stays refused.
  if (!o.dataDir) return
  for (let attempt = 0; !o.closed(); attempt++) {
    await sleep(backoffMs(attempt, REOPEN_BACKOFF))
    try {
      const fresh = await o.open()
      if (o.closed()) return void (await fresh.close())
      o.swap(fresh)
      o.logger?.warn(
        { dataDir: o.dataDir, attempt },
        'PGlite data directory opened again after the PANIC',
      )
      return
    } catch (err) {
      o.logger?.warn({ err, attempt }, 'PGlite data directory does not open yet, trying again')
    }
  }
}

/** Reopening after a PANIC: soon at first, then every half minute while the disk is full. */
const REOPEN_BACKOFF = { baseMs: 500, maxMs: 30_000, jitter: 'equal' } as const
