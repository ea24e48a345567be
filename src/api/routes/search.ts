import type { FastifyPluginAsync } from 'fastify'
import { nsidsOf } from '../../config.ts'
import { LIST_CACHE } from '../http-cache.ts'
import { type ListFilterQuery, listFilterProperties, parseListFilters } from '../list-filters.ts'
import { errorResponses, searchPageSchema } from '../schemas.ts'
import { searchPrompts, searchWords } from '../search-reads.ts'

// GET /v1/search: full-text search over content with the filters, order and paging of
// GET /v1/prompts (SPEC section 6). Everything is parsed before any query runs.

interface SearchQueryString extends ListFilterQuery {
  q: string
}

/** Queries longer than this are refused: nobody types them, and each word costs a probe. */
const MAX_QUERY_CHARS = 1000

export const searchRoutes: FastifyPluginAsync = async (app) => {
  const { db, config } = app.ctx
  const nsids = nsidsOf(config)

  app.get<{ Querystring: SearchQueryString }>(
    '/v1/search',
    {
      config: LIST_CACHE,
      schema: {
        tags: ['prompts'],
        summary: 'Prompts whose content has all the words of q',
        description:
          'Words are runs of letters and digits, matched whole and case-insensitively (no stemming). Filters, order (rkey descending, then did) and paging as GET /v1/prompts; each item has a snippet.',
        querystring: {
          type: 'object',
          properties: {
            q: {
              type: 'string',
              minLength: 1,
              maxLength: MAX_QUERY_CHARS,
              description: 'words to find',
            },
            ...listFilterProperties,
          },
          required: ['q'],
        },
        response: { 200: searchPageSchema, ...errorResponses },
      },
    },
    async (request) => {
      const q = request.query
      const words = searchWords(q.q)
      const parsed = await parseListFilters(db, nsids, q)
      if (!parsed) return { items: [] }
      return searchPrompts(db, nsids, { words, ...parsed.filters }, parsed.limit)
    },
  )
}
