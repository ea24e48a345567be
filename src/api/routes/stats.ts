import type { FastifyPluginAsync } from 'fastify'
import { getStats } from '../../db/queries.ts'

export const statsRoutes: FastifyPluginAsync = async (app) => {
  app.get('/v1/stats', async () => {
    const ingest = app.apiOptions.ingest
    return getStats(app.ctx.db, { source: ingest?.source ?? null, key: ingest?.key ?? null })
  })
}
