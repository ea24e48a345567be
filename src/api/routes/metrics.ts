import type { FastifyPluginAsync } from 'fastify'

export const metricsRoutes: FastifyPluginAsync = async (app) => {
  app.get('/metrics', async (_request, reply) => {
    const registry = app.ctx.metrics.registry
    reply.header('content-type', registry.contentType)
    return registry.metrics()
  })
}
