import type { FastifyPluginAsync } from 'fastify'
import { getRepoView } from '../../db/repo-chain.ts'
import { LOOKUP_CACHE } from '../http-cache.ts'
import { notFound } from '../http-errors.ts'
import { parseActor } from '../params.ts'
import { resolveActor } from '../reads.ts'
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
  const { db } = app.ctx
  app.get<{ Params: { did: string } }>(
    '/v1/repos/:did',
    {
      config: LOOKUP_CACHE,
      schema: {
        tags: ['repos'],
        summary: 'One repo: account status, sync state and record counts (DID or handle)',
        params: {
          type: 'object',
          properties: { did: { type: 'string', description: 'A DID or a handle' } },
          required: ['did'],
        },
        response: { 200: repoSchema, ...errorResponses },
      },
    },
    async (request) => {
      const actor = parseActor(request.params.did, 'did')
      const did = await resolveActor(db, actor)
      if (did === null)
        throw notFound(`no such repo: handle ${request.params.did} is not known to this index`)
      const view = await getRepoView(db, did)
      if (!view) throw notFound(`repo ${did} is not tracked by this index`)
      return view
    },
  )
}
