import type { FastifyPluginAsync } from 'fastify'
import { nsidsOf } from '../../config.ts'
import { LOOKUP_CACHE } from '../http-cache.ts'
import { notFound } from '../http-errors.ts'
import { parseActor, parseRkey } from '../params.ts'
import { resolveActor } from '../reads.ts'
import { getRevisionDetail, getRevisionDiff } from '../revision-reads.ts'
import { revisionDetailSchema, revisionDiffSchema, revParam } from '../revision-schemas.ts'
import { errorResponses, repoParam, rkeyParam } from '../schemas.ts'

// One revision with its texts, and the line diff between two revisions of one prompt.
// Revs are looked up within the prompt named by the path: a rev of another prompt, or one
// that does not exist, is a 404.

const tags = ['prompts']

export const revisionRoutes: FastifyPluginAsync = async (app) => {
  const { db, config } = app.ctx
  const nsids = nsidsOf(config)

  const repoOf = async (value: string): Promise<string> => {
    const actor = parseActor(value, 'did')
    const did = await resolveActor(db, actor)
    if (did === null) throw notFound(`no such prompt: handle ${value} is not known to this index`)
    return did
  }

  app.get<{ Params: { did: string; rkey: string; rev: string } }>(
    '/v1/prompts/:did/:rkey/revisions/:rev',
    {
      config: LOOKUP_CACHE,
      schema: {
        tags,
        summary: 'One revision of a prompt, with its content and coreMemory',
        params: {
          type: 'object',
          properties: { did: repoParam, rkey: rkeyParam, rev: revParam },
          required: ['did', 'rkey', 'rev'],
        },
        response: { 200: revisionDetailSchema, ...errorResponses },
      },
    },
    async (request) => {
      const { params } = request
      const rkey = parseRkey(params.rkey)
      const rev = parseRkey(params.rev, 'rev')
      return getRevisionDetail(db, nsids, await repoOf(params.did), rkey, rev)
    },
  )

  app.get<{ Params: { did: string; rkey: string }; Querystring: { from?: string; to?: string } }>(
    '/v1/prompts/:did/:rkey/diff',
    {
      config: LOOKUP_CACHE,
      schema: {
        tags,
        summary: 'Line diff of content and coreMemory between two revisions',
        description:
          'Default: the previous revision against the newest. Unchanged runs longer than a few lines are collapsed to a hunk with `skipped` and no lines.',
        params: {
          type: 'object',
          properties: { did: repoParam, rkey: rkeyParam },
          required: ['did', 'rkey'],
        },
        querystring: {
          type: 'object',
          properties: {
            from: { ...revParam, description: 'older revision (default: the one before to)' },
            to: { ...revParam, description: 'newer revision (default: the newest)' },
          },
        },
        response: { 200: revisionDiffSchema, ...errorResponses },
      },
    },
    async (request) => {
      const { params, query } = request
      const rkey = parseRkey(params.rkey)
      const from = query.from === undefined ? null : parseRkey(query.from, 'from')
      const to = query.to === undefined ? null : parseRkey(query.to, 'to')
      return getRevisionDiff(db, nsids, await repoOf(params.did), rkey, from, to)
    },
  )
}
