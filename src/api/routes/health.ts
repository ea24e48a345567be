import type { FastifyPluginAsync } from 'fastify'
import { ingestGapSchema } from '../schemas.ts'

const okSchema = {
  type: 'object',
  properties: {
    ok: { type: 'boolean' },
    reason: { type: 'string' },
    // Ready means the API answers; an ingestion gap is reported, it does not take it out.
    details: {
      type: 'object',
      properties: { ingest: { type: 'object', properties: { gap: ingestGapSchema } } },
    },
  },
  required: ['ok'],
} as const

// Probes are exempt from the rate limit: a load balancer polling from one address must
// not take an instance out of rotation.
export const healthRoutes: FastifyPluginAsync = async (app) => {
  app.get(
    '/healthz',
    {
      config: { rateLimit: false },
      schema: {
        tags: ['ops'],
        summary: '200 while the process lives',
        response: { 200: okSchema },
      },
    },
    async () => ({ ok: true }),
  )
  app.get(
    '/readyz',
    {
      config: { rateLimit: false },
      schema: {
        tags: ['ops'],
        summary: '200 once migrations ran and the database answers, else 503',
        response: { 200: okSchema, 503: okSchema },
      },
    },
    async (_request, reply) => {
      if (!app.apiOptions.isReady())
        return reply.status(503).send({ ok: false, reason: 'migrations pending' })
      try {
        await app.ctx.db.ping()
      } catch (err) {
        app.log.warn({ err }, 'readiness check: database does not answer')
        return reply.status(503).send({ ok: false, reason: 'database unavailable' })
      }
      const gap = app.apiOptions.ingest?.gap?.() ?? null
      return gap ? { ok: true, details: { ingest: { gap } } } : { ok: true }
    },
  )
}
