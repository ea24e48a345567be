import type { FastifyPluginAsync } from 'fastify'
import { LOOKUP_CACHE } from '../http-cache.ts'
import { repoLookup } from '../queries.ts'
import { errorResponses } from '../schemas.ts'

// One tracked repo: its upstream account status, its Sync 1.1 chain state, its record counts.

const nullableStr = { type: ['string', 'null'] } as const
const int = { type: 'integer' } as const

export const repoSchema = {
  type: 'object',
  description:
    'A tracked repo: account status, sync state (null before the verified firehose saw it), visible record counts',
  properties: {
    did: { type: 'string' },
    handle: nullableStr,
    account: {
      type: 'object',
      properties: { active: { type: 'boolean' }, status: nullableStr, hidden: { type: 'boolean' } },
      required: ['active', 'status', 'hidden'],
    },
    sync: {
      type: 'object',
      properties: {
        state: {
          type: ['string', 'null'],
          enum: ['synchronized', 'desynchronized', 'resyncing', null],
        },
        rev: nullableStr,
        reason: nullableStr,
        since: { type: ['string', 'null'], format: 'date-time' },
      },
      required: ['state', 'rev', 'reason', 'since'],
    },
    records: {
      type: 'object',
      properties: { prompts: int, conversations: int, agents: int },
      required: ['prompts', 'conversations', 'agents'],
    },
  },
  required: ['did', 'handle', 'account', 'sync', 'records'],
} as const

export const repoRoutes: FastifyPluginAsync = async (app) => {
  app.get<{ Params: { did: string } }>(
    '/v1/repos/:did',
    {
      config: LOOKUP_CACHE,
      schema: {
        tags: ['repos'],
        summary: 'One repo: account status, sync state and record counts (DID or handle)',
        params: repoLookup.schema.params,
        response: { 200: repoSchema, ...errorResponses },
      },
    },
    async (request) => repoLookup.run(app.queries, { params: request.params, query: {} }),
  )
}
