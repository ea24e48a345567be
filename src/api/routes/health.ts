import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import { dbErrorCode } from '../../faults/errors.ts'
import { ingestGapSchema, opsRoute } from '../schemas.ts'

// A probe answers within a load balancer's timeout even when the database hangs.
const PING_TIMEOUT_MS = 3000

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
    opsRoute('200 while the process lives', { response: { 200: okSchema } }),
    async () => ({ ok: true }),
  )
  app.get(
    '/readyz',
    opsRoute('200 once migrations ran and the database answers, else 503', {
      response: { 200: okSchema, 503: okSchema },
    }),
    async (_request, reply) => {
      const { status, body } = await readiness(app)
      return reply.status(status).send(body)
    },
  )
}

/** What /readyz answers: ready once migrations ran and the database answers a ping. */
export async function readiness(app: FastifyInstance): Promise<{
  status: 200 | 503
  body: { ok: boolean; reason?: string; details?: { ingest: { gap: object } } }
}> {
  if (!app.apiOptions.isReady())
    return { status: 503, body: { ok: false, reason: 'migrations pending' } }
  try {
    await withTimeout(app.ctx.db.ping(), PING_TIMEOUT_MS)
  } catch (err) {
    app.log.warn({ err }, 'readiness check: database does not answer')
    return {
      status: 503,
      body: { ok: false, reason: `database unavailable (${dbErrorCode(err)})` },
    }
  }
  const gap = app.apiOptions.ingest?.gap?.() ?? null
  return { status: 200, body: gap ? { ok: true, details: { ingest: { gap } } } : { ok: true } }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(Object.assign(new Error(`no answer in ${ms} ms`), { code: 'PING_TIMEOUT' })),
      ms,
    )
  })
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer))
}
