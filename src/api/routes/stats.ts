import type { FastifyPluginAsync } from 'fastify'
import { getStats } from '../../db/read/stats.ts'
import { LIST_CACHE } from '../http-cache.ts'
import { errorResponses, statsSchema } from '../schemas.ts'

export const statsRoutes: FastifyPluginAsync = async (app) => {
  app.get(
    '/v1/stats',
    {
      config: LIST_CACHE,
      schema: {
        tags: ['stats'],
        summary: 'Counts of visible records and flags, and the ingestion cursor',
        response: { 200: statsSchema, ...errorResponses },
      },
    },
    async () => {
      const ingest = app.apiOptions.ingest
      const stats = await getStats(app.ctx.db, {
        source: ingest?.source ?? null,
        key: ingest?.key ?? null,
      })
      return { ...stats, ingest: { ...stats.ingest, gap: ingest?.gap?.() ?? null } }
    },
  )
}
