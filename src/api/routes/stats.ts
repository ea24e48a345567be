import type { FastifyPluginAsync } from 'fastify'
import { countRecords, getIngestStatus, type RecordCounts } from '../../db/read/stats.ts'
import { ANY_REPO, type CachedAnswer } from '../answer-cache.ts'
import { cachedAnswer } from '../answer-cache-plugin.ts'
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
      // The counts scan every visible row (a third of a second for 500,000 prompts, three
      // backends at once): kept like a list page, which any change drops, so repeated
      // requests do not scan again. The ingest position is read fresh each time.
      const [counts, status] = await Promise.all([
        cachedAnswer(
          app.answers,
          'stats counts',
          () => countRecords(db),
          (c) => JSON.stringify(c),
          () => [ANY_REPO],
        ),
        getIngestStatus(db, ingest?.source ?? null, ingest?.key ?? null),
      ])
      const parsed = JSON.parse((counts as CachedAnswer).body) as RecordCounts
      return { ...parsed, ingest: { ...status, gap: ingest?.gap?.() ?? null } }
    },
  )
}
