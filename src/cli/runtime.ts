import type { FastifyInstance } from 'fastify'
import { type ApiOptions, buildApp } from '../api/app.ts'
import { type Config, collectionsOf } from '../config.ts'
import type { AppContext } from '../context.ts'
import { openDatabase } from '../db/client.ts'
import { countPromptsByFlag } from '../db/queries.ts'
import { countReposBySyncState } from '../db/repo-chain.ts'
import { applyBatch, type IndexerDeps, indexerDepsFor } from '../indexer/apply.ts'
import { countOutcomes, IngestPipeline } from '../indexer/pipeline.ts'
import { resolverFor } from '../ingest/create-source.ts'
import { fetchRepoSnapshot } from '../ingest/repo-snapshot.ts'
import type { Source } from '../ingest/source.ts'
import { createLogger } from '../logger.ts'
import { createMetrics } from '../metrics.ts'
import type { RepoSnapshotEvent } from '../model/events.ts'
import { VERSION } from '../version.ts'
import { installLastResort } from './last-resort.ts'
import { trustedStartCursor } from './start-cursor.ts'

export interface Runtime {
  ctx: AppContext
  deps: IndexerDeps
  ready: boolean
  /** Source time (µs) of the newest processed event, for the lag gauge. */
  newestEventUs: () => number | null
  close(): Promise<void>
}

export async function openRuntime(
  config: Config,
  opts: {
    migrate: boolean
  },
): Promise<Runtime> {
  const logger = createLogger(config.logLevel)
  const dataDir = config.databaseUrl ? null : config.dataDir
  const db = await openDatabase({ url: config.databaseUrl, dataDir })
  const rt: Runtime = {
    ctx: undefined as unknown as AppContext,
    deps: undefined as unknown as IndexerDeps,
    ready: false,
    newestEventUs: () => null,
    close: async () => {
      await db.close()
    },
  }
  // The gauge is counted in the background and read from memory: a scrape must not wait
  // behind an ingest transaction (PGlite has one connection) or it times out.
  let gauge: Record<string, number> = {}
  let gaugeAt = 0
  let counting = false
  const refreshGauge = () => {
    if (counting || Date.now() - gaugeAt < 5000) return
    counting = true
    countPromptsByFlag(db)
      .then((c) => {
        gauge = c.flags
        gaugeAt = Date.now()
      })
      .catch((err) => logger.warn({ err }, 'counting prompts for the gauge failed'))
      .finally(() => {
        counting = false
      })
  }
  // Like the prompt gauge: a scrape never waits on the database (PGlite shares this thread
  // with ingestion), it reads the last count and starts a new one.
  let repoGauge: Record<string, number> = {}
  let repoCounting = false
  const refreshRepoGauge = () => {
    if (repoCounting) return
    repoCounting = true
    countReposBySyncState(db)
      .then((c) => {
        repoGauge = c
      })
      .catch((err) => logger.warn({ err }, 'counting repos for the gauge failed'))
      .finally(() => {
        repoCounting = false
      })
  }
  const metrics = createMetrics({
    version: VERSION,
    collections: collectionsOf(config),
    collectPromptGauge: async () => {
      refreshGauge()
      return gauge
    },
    collectRepoGauge: async () => {
      refreshRepoGauge()
      return repoGauge
    },
    lagSeconds: () => {
      const us = rt.newestEventUs()
      return us === null ? null : Math.max(0, Date.now() / 1000 - us / 1e6)
    },
  })
  rt.ctx = { config, logger, db, metrics }
  rt.deps = indexerDepsFor(config, db)
  if (opts.migrate) {
    logger.info({ driver: db.kind }, 'applying migrations')
    await db.migrate()
    rt.ready = true
  } else {
    // A reader (serve) never migrates: it is ready once a writer or `migrate` has.
    rt.ready = await db.isMigrated()
    if (!rt.ready) {
      logger.warn(
        'database is not migrated yet: /readyz answers 503 until `prompt-appview migrate` runs',
      )
      const poll = setInterval(() => {
        db.isMigrated().then(
          (ok) => {
            if (ok) {
              rt.ready = true
              clearInterval(poll)
            }
          },
          (err) => logger.warn({ err }, 'checking migrations failed'),
        )
      }, 5000)
      poll.unref()
      const close = rt.close
      rt.close = async () => {
        clearInterval(poll)
        await close()
      }
    }
  }
  return rt
}

/**
 * Indexes a repo fetched whole (backfill, the operator's resync): one transaction through
 * the same indexer as live events, so the rev guard settles any race with them.
 */
export async function indexSnapshot(rt: Runtime, snapshot: RepoSnapshotEvent): Promise<void> {
  countOutcomes(rt.ctx.metrics, 'backfill', await applyBatch(rt.deps, [snapshot], null))
}

export async function startServer(
  rt: Runtime,
  ingest: ApiOptions['ingest'],
  opts: { readApi: boolean },
): Promise<FastifyInstance> {
  const { config } = rt.ctx
  const resolver = resolverFor(config)
  const app = await buildApp(rt.ctx, {
    ingest,
    isReady: () => rt.ready,
    readApi: opts.readApi,
    // POST /admin/repos/{did}/resync: fetch the repo whole and reconcile, as backfill does.
    resyncRepo: async (did) => {
      const snapshot = await fetchRepoSnapshot(did, {
        resolver,
        collections: collectionsOf(config),
        allowPrivateNetwork: config.allowPrivateNetwork,
        forceRefresh: true,
      })
      await indexSnapshot(rt, snapshot)
    },
  })
  await app.listen({ host: config.host, port: config.port })
  if (opts.readApi)
    rt.ctx.logger.info(
      { ui: uiAddress(app, config.host) },
      `browse UI at ${uiAddress(app, config.host)}`,
    )
  return app
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

export async function startIngest(
  rt: Runtime,
  source: Source,
  opts: { onNewDids?: (dids: string[]) => void } = {},
): Promise<IngestHandle> {
  const { config, logger } = rt.ctx
  const part = config.partition
  const abort = new AbortController()
  // Settled first: an auto-detected Jetstream wire decides which cursor is ours.
  await source.prepare?.(abort.signal)
  // Partitions read the same upstream but each keeps its own position.
  const key = part ? `${source.key}#${part.index}/${part.count}` : source.key
  const startCursor = await trustedStartCursor(rt.ctx, source, key)
  const pipeline = new IngestPipeline(rt.ctx, rt.deps, {
    source: source.name,
    key,
    batchSize: config.batchSize,
    batchDelayMs: config.batchDelayMs,
    queueSize: config.queueSize,
    partition: part,
    onNewDids: opts.onNewDids,
  })
  rt.newestEventUs = () => pipeline.newestEventUs
  logger.info({ source: source.name, key, startCursor }, 'ingest starting')
  const writer = pipeline.run()
  const reader = source.run(pipeline, startCursor, abort.signal).finally(() => pipeline.stop())
  const done = Promise.all([reader, writer]).then(() => {
    logger.info({ source: source.name, events: pipeline.committedEvents }, 'ingest stopped')
  })
  return {
    pipeline,
    key,
    done,
    stop: async () => {
      pipeline.stop({ drain: false })
      abort.abort()
      await done
    },
  }
}

/**
 * SIGTERM/SIGINT: run `shutdown` once; a second signal or a stuck shutdown past the
 * deadline exits hard. An uncaught exception or unhandled rejection runs it too, bounded,
 * and exits with status 1 (src/cli/last-resort.ts).
 */
export function onShutdownSignal(
  logger: AppContext['logger'],
  shutdown: () => Promise<void>,
  deadlineMs = 20_000,
): void {
  let started = false
  const handler = (signal: NodeJS.Signals) => {
    if (started) {
      logger.warn({ signal }, 'second signal, exiting now')
      process.exit(1)
    }
    started = true
    logger.info({ signal }, 'shutting down')
    const timer = setTimeout(() => {
      logger.error({ deadlineMs }, 'shutdown took too long, exiting')
      process.exit(1)
    }, deadlineMs)
    timer.unref()
    shutdown().then(
      () => clearTimeout(timer),
      (err) => {
        logger.error({ err }, 'shutdown failed')
        process.exitCode = 1
      },
    )
  }
  process.on('SIGTERM', handler)
  process.on('SIGINT', handler)
  installLastResort(logger, async () => {
    if (started) return
    started = true
    await shutdown()
  })
}
