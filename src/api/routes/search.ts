import type { FastifyPluginAsync } from 'fastify'
import { LIST_CACHE } from '../http-cache.ts'
import { promptSearch, type SearchQuery } from '../queries.ts'
import { errorResponses, searchPageSchema } from '../schemas.ts'

// GET /v1/search: full-text search over content with the filters, order and paging of
// GET /v1/prompts (SPEC section 6). Everything is parsed before any query runs.

export const searchRoutes: FastifyPluginAsync = async (app) => {
  app.get<{ Querystring: SearchQuery }>(
    '/v1/search',
    {
      config: LIST_CACHE,
      schema: {
        tags: ['prompts'],
        summary: 'Prompts whose content has all the words of q',
        description:
          'Words are runs of letters and digits, matched whole and case-insensitively (no stemming). Filters, order (rkey descending, then did) and paging as GET /v1/prompts; each item has a snippet.',
        querystring: promptSearch.schema.querystring,
        response: { 200: searchPageSchema, ...errorResponses },
      },
    },
    async (request) => promptSearch.run(app.queries, { params: {}, query: request.query }),
  )
}
