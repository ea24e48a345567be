import type { FastifyPluginAsync } from 'fastify'
import { LOOKUP_CACHE } from '../http-cache.ts'
import { revisionDetail, revisionDiff } from '../queries.ts'
import { revisionDetailSchema, revisionDiffSchema } from '../revision-schemas.ts'
import { errorResponses } from '../schemas.ts'

// One revision with its texts, and the line diff between two revisions of one prompt.
// Revs are looked up within the prompt named by the path: a rev of another prompt, or one
// that does not exist, is a 404.

const tags = ['prompts']

export const revisionRoutes: FastifyPluginAsync = async (app) => {
  const q = app.queries

  app.get<{ Params: { did: string; rkey: string; rev: string } }>(
    '/v1/prompts/:did/:rkey/revisions/:rev',
    {
      config: LOOKUP_CACHE,
      schema: {
        tags,
        summary: 'One revision of a prompt, with its content and coreMemory',
        params: revisionDetail.schema.params,
        response: { 200: revisionDetailSchema, ...errorResponses },
      },
    },
    async (request) => revisionDetail.run(q, { params: request.params, query: {} }),
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
        ...revisionDiff.schema,
        response: { 200: revisionDiffSchema, ...errorResponses },
      },
    },
    async (request) => revisionDiff.run(q, { params: request.params, query: request.query }),
  )
}
