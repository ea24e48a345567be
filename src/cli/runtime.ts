import type { FastifyInstance } from 'fastify'
import type { Logger } from 'pino'
import { type ApiOptions, buildApp } from '../api/app.ts'
import { type Config, collectionsOf, retiredSettingsIn } from '../config/config.ts'
import { VERSION } from '../config/version.ts'
import { type AppContext, createContext } from '../context/context.ts'
import { openDatabase } from '../db/client.ts'
import { readVisibleCounts } from '../db/read/visible-counts.ts'
import { countReposBySyncState } from '../db/repo-chain.ts'
import { applyBatch } from '../indexer/apply.ts'
import { countOutcomes, IngestPipeline } from '../indexer/pipeline.ts'
import type { resolverFor } from '../ingest/did-resolver.ts'
import type { Source } from '../ingest/source.ts'
import type { RepoSnapshotEvent } from '../model/events.ts'
import { createLogger } from '../observe/logger.ts'
import { createMetrics } from '../observe/metrics.ts'
import { backgroundCount } from './background-count.ts'
import { createShutdown, type Shutdown } from './shutdown.ts'
import { trustedStartCursor } from './start-cursor.ts'

/**
 * A process's runtime, built once in dependency order (logger, database, metrics, the
 * dependency bag, readiness) and never changed afterwards. Whatever is opened on it later
 * (the HTTP server, an ingest) registers its close on `shutdown`.
 */
export interface Runtime {
  readonly ctx: AppContext
  /** True once migrations ran; a reader (serve) polls until a writer or `migrate` ran them. */
  readonly isReady: () => boolean
  readonly shutdown: Shutdown
  /** Closes everything opened on this runtime, newest first (shutdown.close). */
  readonly close: () => Promise<void>
}

export interface OpenRuntimeOptions {
  migrate: boolean
  /** Made by the caller when it opens things before the runtime (the demo's network). */
  logger?: Logger
  shutdown?: Shutdown
}

export async function openRuntime(config: Config, opts: OpenRuntimeOptions): Promise<Runtime> {
  const logger = opts.logger ?? createLogger(config.logLevel)
  const shutdown = opts.shutdown ?? createShutdown(logger)
  const retired = retiredSettingsIn()
  if (retired.length > 0)
    logger.warn(
      { settings: retired },
      'settings no longer used: prompt analysis and signature checks run on the main thread',
    )
  const db = await openDatabase({
    url: config.databaseUrl,
    dataDir: config.databaseUrl ? null : config.dataDir,
    sharedBuffers: config.pgliteSharedBuffers ?? undefined,
    minFreeBytes: config.pgliteMinFreeMb * (1 << 20),
    readTimeoutMs: config.readTimeoutMs,
    logger,
  })
  shutdown.add('database', () => db.close())
  const metrics = createMetrics({
    version: VERSION,
    collections: collectionsOf(config),
    collectPromptGauge: backgroundCount(async () => (await readVisibleCounts(db)).flags, {
      logger,
      what: 'prompts',
      minIntervalMs: 5000,
    }),
    collectRepoGauge: backgroundCount(() => countReposBySyncState(db), {
      logger,
      what: 'repos',
      minIntervalMs: 0,
    }),
  })
  const ctx = createContext({ config, logger, db, metrics })
  const isReady = await readiness(ctx, opts.migrate, shutdown)
  return Object.freeze({ ctx, isReady, shutdown, close: () => shutdown.close() })
}

/** Migrates (a writer), or reports whether someone did and watches until they do (a reader). */
async function readiness(
  ctx: AppContext,
  migrate: boolean,
  shutdown: Shutdown,
): Promise<() => boolean> {
  const { db, logger } = ctx
  if (migrate) {
    logger.info({ driver: db.kind }, 'applying migrations')
    await db.migrate()
    return () => true
  }
  if (await db.isMigrated()) return () => true
  logger.warn(
    'database is not migrated yet: /readyz answers 503 until `prompt-appview migrate` runs',
  )
  let migrated = false
  const poll = setInterval(() => {
    db.isMigrated().then(
      (ok) => {
        if (!ok) return
        migrated = true
        clearInterval(poll)
      },
      (err) => logger.warn({ err }, 'checking migrations failed'),
    )
  }, 5000)
  poll.unref()
  shutdown.add('migration poll', () => clearInterval(poll))
  return () => migrated
}

/**
 * Indexes a repo fetched whole (backfill, the operator's resync): one transaction through
 * the same indexer as live events, so the rev guard settles any race with them.
 */
export async function indexSnapshot(
  rt: Pick<Runtime, 'ctx'>,
  snapshot: RepoSnapshotEvent,
): Promise<void> {
  countOutcomes(rt.ctx.metrics, 'backfill', await applyBatch(rt.ctx, [snapshot], null))
}

/** Builds the HTTP app on the runtime's context, listens, and registers its close. */
export async function startServer(
  rt: Runtime,
  ingest: ApiOptions['ingest'],
  opts: { readApi: boolean },
): Promise<FastifyInstance> {
  const { config } = rt.ctx
  let resolver: ReturnType<typeof resolverFor> | null = null
  const app = await buildApp(rt.ctx, {
    ingest,
    isReady: rt.isReady,
    readApi: opts.readApi,
    // POST /admin/repos/{did}/resync: fetch the repo whole and reconcile, as backfill does.
    // The repo fetcher (DID resolution, CAR and MST reading) loads on the first resync: a
    // reader that is never asked for one does not carry it.
    resyncRepo: async (did) => {
      const { resolverFor } = await import('../ingest/did-resolver.ts')
      const { fetchRepoSnapshot } = await import('../ingest/backfill/repo-snapshot.ts')
      resolver ??= resolverFor(config, rt.ctx.metrics)
      const snapshot = await fetchRepoSnapshot(did, {
        resolver,
        collections: collectionsOf(config),
        allowPrivateNetwork: config.allowPrivateNetwork,
        forceRefresh: true,
        logger: rt.ctx.logger,
      })
      await indexSnapshot(rt, snapshot)
    },
  })
  // A Fastify app closed before or while it listens goes on listening, with its database
  // closed: the close waits for a listen under way, and a stop before start means no listen.
  let listening: Promise<unknown> = Promise.resolve()
  rt.shutdown.add('http server', async () => {
    await listening.catch(() => {})
    await closeDraining(app, rt.ctx.logger)
  })
  if (rt.shutdown.closing) return app
  listening = app.listen({ host: config.host, port: config.port })
  await listening
  const ui = uiAddress(app, config.host)
  if (opts.readApi) rt.ctx.logger.info({ ui }, `browse UI at ${ui}`)
  return app
}

/** How long requests under way may finish at shutdown before their connections are cut. */
const DRAIN_MS = 5000

/**
 * Closes the app, letting requests under way finish; a connection still open after
 * DRAIN_MS is cut, so no client can hold the shutdown up to its deadline.
 */
async function closeDraining(app: FastifyInstance, logger: Logger): Promise<void> {
  const cut = setTimeout(() => {
    app.server.getConnections((err, connections) => {
      logger.warn({ err, connections, drainMs: DRAIN_MS }, 'requests still open at shutdown: cut')
      app.server.closeAllConnections()
    })
  }, DRAIN_MS)
  try {
    await app.close()
  } finally {
    clearTimeout(cut)
  }
}

/** Where a person points a browser: a wildcard bind address is reachable as localhost. */
export function uiAddress(app: FastifyInstance, host: string): string {
  const address = app.server.address()
  const port = address && typeof address === 'object' ? address.port : 0
  const shown =
    host === '0.0.0.0' || host === '::' || host === ''
      ? 'localhost'
      : host.includes(':')
        ? `[${host}]`
        : host
  return `http://${shown}:${port}/`
}

export interface IngestHandle {
  pipeline: IngestPipeline
  key: string
  /** Resolves when the source ended (finite sources) or was stopped, and all is committed. */
  done: Promise<void>
  /** Stops reading, commits the batch in flight (with its cursor), then resolves. */
  stop(): Promise<void>
}

/** A source made ready to read (wire settled, start cursor checked), not reading yet. */
export interface PreparedIngest {
  /** The cursor row this ingest keeps: the source's, per partition. */
  key: string
  /** Starts reading and writing; the returned handle's stop is registered on shutdown. */
  start(opts?: { onNewDids?: (dids: string[]) => void }): IngestHandle
}

/**
 * Settles what must be known before anything else starts: an auto-detected Jetstream
 * wire decides which cursor is ours, and /v1/stats names that cursor. Separate from
 * starting so that the HTTP server opens in between and the ingest, opened last, stops first.
 */
export async function prepareIngest(rt: Runtime, source: Source): Promise<PreparedIngest> {
  const { config, logger } = rt.ctx
  const abort = new AbortController()
  rt.shutdown.add(`${source.name} source`, () => abort.abort())
  await source.prepare?.(abort.signal)
  const part = config.partition
  // Partitions read the same upstream but each keeps its own position.
  const key = part ? `${source.key}#${part.index}/${part.count}` : source.key
  const startCursor = await trustedStartCursor(rt.ctx, source, key)
  const start = (opts: { onNewDids?: (dids: string[]) => void } = {}): IngestHandle => {
    const pipeline = new IngestPipeline(rt.ctx, {
      source: source.name,
      key,
      provenance: source.provenance,
      batchSize: config.batchSize,
      batchDelayMs: config.batchDelayMs,
      queueSize: config.queueSize,
      partition: config.partition,
      onNewDids: opts.onNewDids,
    })
    logger.info({ source: source.name, key, startCursor }, 'ingest starting')
    const writer = pipeline.run()
    const reader = source.run(pipeline, startCursor, abort.signal).finally(() => pipeline.stop())
    const done = Promise.all([reader, writer]).then(() => {
      logger.info({ source: source.name, events: pipeline.committedEvents }, 'ingest stopped')
    })
    const stop = async () => {
      pipeline.stop({ drain: false })
      abort.abort()
      await done
    }
    rt.shutdown.add('ingest', stop)
    return { pipeline, key, done, stop }
  }
  return { key, start }
}

/** Prepares and starts at once, for callers that open nothing in between (tests, benches). */
export async function startIngest(
  rt: Runtime,
  source: Source,
  opts: { onNewDids?: (dids: string[]) => void } = {},
): Promise<IngestHandle> {
  return (await prepareIngest(rt, source)).start(opts)
}
