import Fastify, { type FastifyInstance } from 'fastify'
import type { AppContext } from '../context.ts'
import { healthRoutes } from './routes/health.ts'
import { metricsRoutes } from './routes/metrics.ts'
import { statsRoutes } from './routes/stats.ts'

export interface ApiOptions {
  /** Which cursor /v1/stats reports: the one this process ingests with, if any. */
  ingest: { source: string; key: string } | null
  /** True once migrations ran; /readyz also checks the database answers. */
  isReady: () => boolean
  /** False for an ingest-only process: health and metrics, no read API. Default true. */
  readApi?: boolean
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
    disableRequestLogging: true,
    trustProxy: ctx.config.trustProxy,
    bodyLimit: 64 * 1024,
    requestTimeout: 30_000,
    connectionTimeout: 60_000,
  })
  app.decorate('ctx', ctx)
  app.decorate('apiOptions', opts)

  const histogram = ctx.metrics.httpRequestDurationSeconds
  app.addHook('onResponse', async (request, reply) => {
    // The route pattern, never the raw URL: labels must not carry DIDs or URIs.
    const route = request.routeOptions.url ?? 'unmatched'
    histogram.observe(
      { route, method: request.method, status_code: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    )
  })

  app.setErrorHandler((err: { statusCode?: number; message: string }, request, reply) => {
    const status = err.statusCode ?? 500
    if (status >= 500) request.log.error({ err }, 'request failed')
    const error = status === 400 ? 'InvalidRequest' : status === 404 ? 'NotFound' : status === 401 ? 'AuthRequired' : status === 429 ? 'RateLimitExceeded' : 'InternalServerError'
    return reply.status(status >= 500 ? 500 : status).send({ error, message: status >= 500 ? 'internal error' : err.message })
  })
  app.setNotFoundHandler((request, reply) =>
    reply.status(404).send({ error: 'NotFound', message: `no route ${request.method} ${request.url.split('?')[0]}` }),
  )

  await app.register(healthRoutes)
  await app.register(metricsRoutes)
  if (opts.readApi !== false) await app.register(statsRoutes)
  return app as unknown as FastifyInstance
}
