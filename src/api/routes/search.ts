import type { FastifyPluginAsync } from 'fastify'
import { nsidsOf } from '../../config.ts'
import { FILTER_NAMES } from '../../indexer/flags.ts'
import { LIST_CACHE } from '../http-cache.ts'
import { decodeCursor, parseActor, parseFlag, parseLimit, parseRecordUri } from '../params.ts'
import { resolveActor } from '../reads.ts'
import { cursorParam, errorResponses, limitParam, searchPageSchema } from '../schemas.ts'
import { searchPrompts, searchWords } from '../search-reads.ts'

// GET /v1/search: full-text search over content with the filters, order and paging of
// GET /v1/prompts (SPEC section 6). Everything is parsed before any query runs.

interface SearchQueryString {
  q: string
  flag?: string
  did?: string
  agent?: string
  limit?: string
  cursor?: string
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
            flag: {
              type: 'string',
              enum: [...FILTER_NAMES],
              description: 'a flag name, or ok for none',
            },
            did: { type: 'string', maxLength: 2048, description: 'DID or handle of the repo' },
            agent: {
              type: 'string',
              maxLength: 8192,
              description: 'at-uri of the agent record the prompts name',
            },
            limit: limitParam(100, 50),
            cursor: cursorParam,
          },
          required: ['q'],
        },
        response: { 200: searchPageSchema, ...errorResponses },
      },
    },
    async (request) => {
      const q = request.query
      const words = searchWords(q.q)
      const flag = q.flag === undefined ? null : parseFlag(q.flag)
      const limit = parseLimit(q.limit, 50, 100)
      const after = q.cursor === undefined ? null : decodeCursor(q.cursor)
      const repo = q.did === undefined ? null : parseActor(q.did, 'did')
      const agentRef =
        q.agent === undefined ? null : parseRecordUri(q.agent, 'agent', [nsids.agent])
      const did = repo ? await resolveActor(db, repo) : null
      const agentDid = agentRef ? await resolveActor(db, agentRef.actor) : null
      // A handle nobody here has names no prompts: an empty page, as in lists.
      if ((repo && did === null) || (agentRef && agentDid === null)) return { items: [] }
      const agent = agentRef && agentDid ? { did: agentDid, rkey: agentRef.rkey } : null
      return searchPrompts(db, nsids, { words, flag, did, agent, after }, limit)
    },
  )
}
