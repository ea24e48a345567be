import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import { dbErrorCode } from '../../faults/errors.ts'
import { withTimeout } from '../../faults/timers.ts'
import { ingestGapSchema, opsRoute } from '../schemas.ts'

// A probe answers within a load balancer's timeout even when the database hangs.
const PING_TIMEOUT_MS = 3000

const okSchema = {
  type: 'object',
  properties: {
    ok: { type: 'boolean' },
    reason: { type: 'string' },
    // Ready means the API answers; an ingestion gap, a pause of ingestion (the disk is
    // full) and a slow database are reported, they do not take it out of rotation.
    details: {
      type: 'object',
      properties: {
        ingest: {
          type: 'object',
          properties: {
            gap: ingestGapSchema,
            paused: {
              type: 'object',
              properties: {
                reason: { type: 'string' },
                since: { type: 'string' },
                error: { type: 'string' },
              },
            },
          },
        },
        database: {
          type: 'object',
          properties: {
            slow: { type: 'boolean' },
            pingMs: { type: 'number' },
            recentTimeouts: { type: 'integer' },
            lastTimeoutAt: { type: 'string' },
          },
        },
      },
    },
  },
  required: ['ok'],
} as const

// Probes are exempt from the rate limit: a load balancer polling from one address must
// not take an instance out of rotation.
export const healthRoutes: FastifyPluginAsync = async (app) => {
  app.get(
    '/healthz',
    opsRoute('200 while the process lives', { response: { 200: okSchema } }),
    async () => ({ ok: true }),
  )
  app.get(
    '/readyz',
    opsRoute(
      '200 once migrations ran and the database answers (details name a pause or a slow database), else 503',
      {
        response: { 200: okSchema, 503: okSchema },
      },
    ),
    async (_request, reply) => {
      const { status, body } = await readiness(app)
      return reply.status(status).send(body)
    },
  )
}

/** A ping slower than this says the database is slow, even before a read timed out. */
const SLOW_PING_MS = 1000

interface Readiness {
  status: 200 | 503
  body: { ok: boolean; reason?: string; details?: Record<string, object> }
}

/**
 * /readyz: 503 until migrations ran or while the database does not answer a ping (naming
 * why); else 200, with an ingestion gap or pause or a slow database beside it.
 */
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
