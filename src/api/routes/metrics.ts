import type { FastifyPluginAsync } from 'fastify'
import { opsRoute } from '../schemas.ts'

export const metricsRoutes: FastifyPluginAsync = async (app) => {
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
