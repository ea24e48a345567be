import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import { getStats } from '../../db/read/stats.ts'
import { LIST_CACHE } from '../http-cache.ts'
import { errorResponses, statsSchema } from '../schemas.ts'

/**
 * GET /v1/stats: the counts of visible records and flags, and the ingestion cursor of this
 * process's source with the hole it reports. Both read a few rows (the counts are kept by
 * triggers, see db/read/visible-counts.ts), so neither is cached: a dashboard sees each
 * commit's counts on its next poll.
 */
export async function readStats(app: FastifyInstance) {
  const ingest = app.apiOptions.ingest
  const stats = await getStats(app.ctx.db, {
    source: ingest?.source ?? null,
    key: ingest?.key ?? null,
  })
  return { ...stats, ingest: { ...stats.ingest, gap: ingest?.gap?.() ?? null } }
}

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
    async () => readStats(app),
  )
}
