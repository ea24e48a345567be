import type { FastifyPluginAsync } from 'fastify'

export const healthRoutes: FastifyPluginAsync = async (app) => {
  app.get('/healthz', async () => ({ ok: true }))
  app.get('/readyz', async (_request, reply) => {
    if (!app.apiOptions.isReady()) return reply.status(503).send({ ok: false, reason: 'migrations pending' })
    try {
      await app.ctx.db.ping()
    } catch (err) {
      app.log.warn({ err }, 'readiness check: database does not answer')
      return reply.status(503).send({ ok: false, reason: 'database unavailable' })
    }
    return { ok: true }
  })
}
