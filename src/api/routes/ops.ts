import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import { dbErrorCode } from '../../faults/errors.ts'
import { withTimeout } from '../../faults/timers.ts'
import { defSchema } from '../catalog/output-schema.ts'

// The operations routes: probes and metrics. They are exempt from the rate limit, so a load
// balancer or a scraper polling from one address never takes an instance out of rotation.

const opsRoute = (summary: string, schema: Record<string, unknown>) => ({
  config: { rateLimit: false },
  schema: { tags: ['ops'], summary, ...schema },
})

// A probe answers within a load balancer's timeout even when the database hangs.
const PING_TIMEOUT_MS = 3000

const object = (properties: Record<string, object>) => ({ type: 'object', properties })
const str = { type: 'string' }

const okSchema = {
  ...object({
    ok: { type: 'boolean' },
    reason: str,
    // Ready means the API answers; an ingestion gap, a pause of ingestion (the disk is
    // full) and a slow database are reported, they do not take it out of rotation.
    details: object({
      ingest: object({
        // A hole the source left in the stream (Jetstream CursorTooOld): backfill.
        gap: defSchema('xyz.quasigod.lab.letta.appview.defs#ingestGap', true),
        paused: object({ reason: str, since: str, error: str }),
      }),
      database: object({
        slow: { type: 'boolean' },
        pingMs: { type: 'number' },
        recentTimeouts: { type: 'integer' },
        lastTimeoutAt: str,
      }),
    }),
  }),
  required: ['ok'],
}

export const opsRoutes: FastifyPluginAsync = async (app) => {
  app.get(
    '/healthz',
    opsRoute('200 while the process lives', { response: { 200: okSchema } }),
    async () => ({ ok: true }),
  )
  app.get(
    '/readyz',
    opsRoute(
      '200 once migrations ran and the database answers (details name a pause or a slow database), else 503',
      { response: { 200: okSchema, 503: okSchema } },
    ),
    async (_request, reply) => {
      const { status, body } = await readiness(app)
      return reply.status(status).send(body)
    },
  )
  app.get(
    '/metrics',
    opsRoute('Prometheus metrics (text format)', {
      produces: ['text/plain'],
      response: { 200: { description: 'Prometheus text exposition format', type: 'string' } },
    }),
    async (_request, reply) => {
      const registry = app.ctx.metrics.registry
      reply.header('content-type', registry.contentType)
      reply.header('cache-control', 'no-store')
      return registry.metrics()
    },
  )
}

/** A ping slower than this says the database is slow, even before a read timed out. */
const SLOW_PING_MS = 1000

interface Readiness {
  status: 200 | 503
  body: { ok: boolean; reason?: string; details?: Record<string, object> }
}

/** /readyz: 503 until migrations ran or while the database does not answer, else 200. */
export async function readiness(app: FastifyInstance): Promise<Readiness> {
  if (!app.apiOptions.isReady())
    return { status: 503, body: { ok: false, reason: 'migrations pending' } }
  const store = app.ctx.metrics.store
  const paused = store.pause()
  const started = performance.now()
  try {
    await withTimeout(app.ctx.db.ping(), PING_TIMEOUT_MS, () => {
      const msg = `no answer in ${PING_TIMEOUT_MS} ms`
      throw Object.assign(new Error(msg), { code: 'PING_TIMEOUT' })
    })
  } catch (err) {
    app.log.warn({ err }, 'readiness check: database does not answer')
    const why = paused?.reason === 'disk_full' ? 'disk full: ' : ''
    return {
      status: 503,
      body: { ok: false, reason: `${why}database unavailable (${dbErrorCode(err)})` },
    }
  }
  const pingMs = Math.round(performance.now() - started)
  const slow = store.slowness()
  const gap = app.apiOptions.ingest?.gap?.() ?? null
  const ingest = { ...(gap ? { gap } : {}), ...(paused ? { paused } : {}) }
  const database =
    slow || pingMs >= SLOW_PING_MS
      ? {
          slow: true,
          pingMs,
          ...(slow ? { recentTimeouts: slow.recentTimeouts, lastTimeoutAt: slow.lastAt } : {}),
        }
      : null
  const details = {
    ...(Object.keys(ingest).length > 0 ? { ingest } : {}),
    ...(database ? { database } : {}),
  }
  return {
    status: 200,
    body: Object.keys(details).length > 0 ? { ok: true, details } : { ok: true },
  }
}
