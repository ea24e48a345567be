import { constants as zlib } from 'node:zlib'
import compress from '@fastify/compress'
import cors from '@fastify/cors'
import rateLimit from '@fastify/rate-limit'
import websocket from '@fastify/websocket'
import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  LogController,
} from 'fastify'
import type { AppContext } from '../context/context.ts'
import type { IngestGap } from '../model/events.ts'
import { installAnswerCache } from './answer-cache-plugin.ts'
import { readContext } from './catalog/define.ts'
import { ChangeFeed } from './changes/feed.ts'
import { ChangeHub, SUBSCRIBE_DEFAULTS, type SubscribeOptions } from './changes/hub.ts'
import { ChangeTail, TAIL_DEFAULTS } from './changes/tail.ts'
import { addCacheHeaders } from './http-cache.ts'
import { errorAnswer, errorNameOf } from './http-errors.ts'
import { MonotonicRateLimitStore } from './rate-limit-store.ts'
import { adminRoutes } from './routes/admin.ts'
import { changesRoutes } from './routes/changes.ts'
import { registerDocs } from './routes/docs.ts'
import { exportRoutes } from './routes/export.ts'
import { opsRoutes } from './routes/ops.ts'
import { readRoutes } from './routes/reads.ts'
import { subscribeRoutes, websocketOptions } from './routes/subscribe.ts'
import { sendHtmlError, uiRoutes, wantsHtml } from './ui/plugin.ts'
import { answerConnect, clientErrorHandler } from './unroutable.ts'
import { xrpcRoutes } from './xrpc/routes.ts'

export interface ApiOptions {
  /** Which cursor /v1/stats reports: the one this process ingests with, if any. */
  ingest: { source: string; key: string; gap?: () => IngestGap | null } | null
  /** True once migrations ran; /readyz also checks the database answers. */
  isReady: () => boolean
  /** Re-fetches and reconciles one repo (POST /admin/repos/{did}/resync); absent: not offered. */
  resyncRepo?: (did: string) => Promise<void>
  /** Serve the read API (/v1, /docs, /admin...); false: ingest-only, just the ops routes. */
  readApi?: boolean
  /** Change rows read per query while streaming /v1/changes. */
  changesPageSize?: number
  /** Bounds of /v1/changes/subscribe (default SUBSCRIBE_DEFAULTS). */
  subscribe?: Partial<SubscribeOptions>
}

declare module 'fastify' {
  interface FastifyInstance {
    ctx: AppContext
    apiOptions: ApiOptions
  }
}

/** Builds the HTTP app; it never listens, so tests drive it through `inject`. */
export async function buildApp(ctx: AppContext, opts: ApiOptions): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: ctx.logger,
    // Per-request lines would dominate the log; the duration histogram covers requests.
    logController: new LogController({ disableRequestLogging: true }),
    trustProxy: ctx.config.trustProxy,
    bodyLimit: 64 * 1024,
    // Socket limits for slow or idle clients; one for handlers stuck on the database.
    requestTimeout: 30_000,
    connectionTimeout: 60_000,
    handlerTimeout: 15_000,
    // A DID may be 2048 characters: a long parameter gets its handler's 400, not a miss.
    routerOptions: { maxParamLength: 4096 },
    clientErrorHandler,
    frameworkErrors: (err, request, reply) => {
      if (wantsHtml(request as never))
        return void sendHtmlError(reply as FastifyReply, 400, err.message)
      ;(reply as FastifyReply).status(400).send({ error: 'InvalidRequest', message: err.message })
    },
  }) as unknown as FastifyInstance
  app.decorate('ctx', ctx)
  app.decorate('apiOptions', opts)
  app.decorate('reads', readContext(ctx, opts.ingest))
  answerConnect(app.server, ctx.logger)
  const readApi = opts.readApi ?? true
  addErrorAnswers(app, readApi)
  await registerPlugins(app, readApi)
  await app.register(opsRoutes)
  if (readApi) await registerReadApi(app, opts)
  return app
}

/** The request histogram, and the error and not-found answers of every route. */
function addErrorAnswers(app: FastifyInstance, readApi: boolean): void {
  const histogram = app.ctx.metrics.httpRequestDurationSeconds
  app.addHook('onResponse', async (request, reply) => {
    // The route pattern, never the raw URL: labels must not carry DIDs or URIs.
    const route = request.routeOptions.url ?? 'unmatched'
    histogram.observe(
      { route, method: request.method, status_code: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    )
  })
  app.setErrorHandler((err: FastifyError, request, reply) => {
    const { status, message, unavailable, slow } = errorAnswer(err)
    if (slow) app.ctx.metrics.store.noteStatementTimeout()
    if (unavailable) {
      request.log.warn({ err }, 'request failed: database unavailable')
      reply.header('retry-after', '5')
    } else if (status >= 500) request.log.error({ err }, 'request failed')
    return reply.status(status).send({ error: errorNameOf(status), message })
  })
  app.setNotFoundHandler((request, reply) =>
    readApi && wantsHtml(request)
      ? sendHtmlError(reply, 404, `there is no page at ${request.url.split('?')[0]}`)
      : reply.status(404).send({
          error: 'NotFound',
          message: `no route ${request.method} ${request.url.split('?')[0]}`,
        }),
  )
}

async function registerPlugins(app: FastifyInstance, readApi: boolean): Promise<void> {
  // Before compress: the ETag is computed on the uncompressed body.
  addCacheHeaders(app)
  // Reads are public, so any origin may make them; admin POSTs get no CORS grant.
  await app.register(cors, {
    origin: '*',
    methods: ['GET', 'HEAD'],
    maxAge: 600,
    strictPreflight: false,
  })
  await app.register(compress, {
    global: true,
    threshold: 1024,
    encodings: ['br', 'gzip', 'deflate'],
    // Brotli's default quality (11) costs far more CPU than its bytes save on JSON.
    brotliOptions: { params: { [zlib.BROTLI_PARAM_QUALITY]: 4 } },
  })
  // Keyed by request.ip, which honours TRUST_PROXY (Fastify's trustProxy above).
  await app.register(rateLimit, {
    max: app.ctx.config.rateLimitPerMinute,
    timeWindow: 60_000,
    store: MonotonicRateLimitStore,
  })
  if (readApi) await registerDocs(app)
  await app.register(websocket, websocketOptions)
}

/** The read routes, and the change services they share: one tail, one feed, one hub. */
async function registerReadApi(app: FastifyInstance, opts: ApiOptions): Promise<void> {
  const { ctx } = app
  const changesPageSize = opts.changesPageSize ?? 500
  // One reader of the change log per process, for the answer cache and the subscriptions.
  const tail = new ChangeTail(ctx.db, ctx.logger, { ...TAIL_DEFAULTS, pageSize: changesPageSize })
  const feed = new ChangeFeed(ctx, changesPageSize)
  const hub = new ChangeHub(tail, feed, ctx.logger, { ...SUBSCRIBE_DEFAULTS, ...opts.subscribe })
  installAnswerCache(app, tail)
  tail.add(hub)
  tail.start()
  app.addHook('onClose', async () => {
    hub.close()
    tail.close()
  })
  await app.register(readRoutes)
  await app.register(xrpcRoutes, { feed })
  await app.register(changesRoutes, { feed })
  await app.register(subscribeRoutes, { hub, feed })
  await app.register(exportRoutes)
  await app.register(uiRoutes)
  if (ctx.config.adminToken) {
    await app.register(adminRoutes, { token: ctx.config.adminToken, resyncRepo: opts.resyncRepo })
  }
}
