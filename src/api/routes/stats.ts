import type { FastifyPluginAsync } from 'fastify'
import { getIngestStatus } from '../../db/read/stats.ts'
import { readVisibleCounts } from '../../db/read/visible-counts.ts'
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
      const { db } = app.ctx
      const ingest = app.apiOptions.ingest
      // Both read a few rows (the counts are kept by triggers, see db/read/visible-counts.ts),
      // so neither is cached: a dashboard sees each commit's counts on its next poll.
      const [counts, status] = await Promise.all([
        readVisibleCounts(db),
        getIngestStatus(db, ingest?.source ?? null, ingest?.key ?? null),
      ])
      return { ...counts, ingest: { ...status, gap: ingest?.gap?.() ?? null } }
    },
  )
}
