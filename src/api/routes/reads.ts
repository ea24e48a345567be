import type { FastifyPluginAsync } from 'fastify'
import { type Read, sendRead } from '../catalog/define.ts'
import { paramsSchema, queryOf, type RawParams } from '../catalog/lexicons.ts'
import { READS } from '../catalog/reads.ts'
import { badRequest, errorResponses } from '../http-errors.ts'

// The REST routes of SPEC section 6: each a path over one read of the catalog (catalog/),
// which checks the parameters against the read's lexicon, so Fastify's own validation is
// off here and the schemas below only document them.

interface RestRoute {
  path: string
  read: Read
  tags: string[]
  summary: string
  description?: string
}

const recordPath = (tail = '') => `/v1/prompts/:did/:rkey${tail}`

const ROUTES: RestRoute[] = [
  {
    path: '/v1/stats',
    read: READS.getStats,
    tags: ['stats'],
    summary: 'Counts of visible records and flags, and the ingestion cursor',
  },
  {
    path: recordPath(),
    read: READS.getPrompt,
    tags: ['prompts'],
    summary: 'One prompt by repo and record key',
  },
  {
    path: recordPath('/revisions'),
    read: READS.getPromptRevisions,
    tags: ['prompts'],
    summary: 'Revision history of one prompt, newest first',
  },
  {
    path: recordPath('/revisions/:rev'),
    read: READS.getPromptRevision,
    tags: ['prompts'],
    summary: 'One revision of a prompt, with its content and coreMemory',
  },
  {
    path: recordPath('/diff'),
    read: READS.getPromptDiff,
    tags: ['prompts'],
    summary: 'Line diff of content and coreMemory between two revisions',
    description:
      'Default: the previous revision against the newest. Unchanged runs longer than a few lines are collapsed to a hunk with `skipped` and no lines.',
  },
  {
    path: '/v1/search',
    read: READS.searchPrompts,
    tags: ['prompts'],
    summary: 'Prompts whose content has all the words of q',
    description:
      'Words are runs of letters and digits, matched whole and case-insensitively (no stemming). Filters, order (rkey descending, then did) and paging as GET /v1/prompts; each item has a snippet.',
  },
  {
    path: '/v1/conversations/:did/:rkey',
    read: READS.getConversation,
    tags: ['conversations'],
    summary: 'One conversation, with the prompt in its slot',
  },
  {
    path: '/v1/agents/:did/:rkey',
    read: READS.getAgent,
    tags: ['agents'],
    summary: 'One agent record and counts of the visible prompts naming it',
    description: '404 only when the agent is neither indexed nor named by a visible prompt.',
  },
  {
    path: '/v1/repos/:did',
    read: READS.getRepo,
    tags: ['repos'],
    summary: 'One repo: account status, sync state and record counts (DID or handle)',
  },
]

/** The schemas of a route over `read`: its lexicon's parameters, split into path and query. */
function routeSchema(route: RestRoute) {
  const inPath = [...route.path.matchAll(/:(\w+)/g)].map((m) => m[1])
  const names = Object.keys(queryOf(route.read.nsid).parameters?.properties ?? {})
  const inQuery = names.filter((n) => !inPath.includes(n))
  return {
    tags: route.tags,
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    ...(inPath.length ? { params: paramsSchema(route.read.nsid, inPath) } : {}),
    ...(inQuery.length ? { querystring: paramsSchema(route.read.nsid, inQuery) } : {}),
    response: { 200: route.read.output, ...errorResponses },
  }
}

type Request = { Params: Record<string, string>; Querystring: RawParams }

/** The catalog checks the parameters: Fastify's validation is skipped. */
const noValidation = () => () => true

export const readRoutes: FastifyPluginAsync = async (app) => {
  for (const route of ROUTES)
    app.get<Request>(
      route.path,
      { config: route.read.http, validatorCompiler: noValidation, schema: routeSchema(route) },
      async (request, reply) =>
        sendRead(app, reply, route.read, { ...request.query, ...request.params }, 'rest'),
    )

  // With `uri`, the prompt at that at-uri (getPromptByUri); otherwise a page (listPrompts).
  const listNames = Object.keys(queryOf(READS.listPrompts.nsid).parameters?.properties ?? {})
  app.get<Request>(
    '/v1/prompts',
    {
      config: READS.listPrompts.http,
      validatorCompiler: noValidation,
      schema: {
        tags: ['prompts'],
        summary: 'One prompt by at-uri, or a filtered page of prompts',
        description:
          "With `uri` (the prompt's at-uri or its conversation's): that prompt. Otherwise a page ordered by rkey descending, then did; items leave out content and coreMemory and carry contentBytes.",
        querystring: {
          type: 'object',
          properties: {
            ...(paramsSchema(READS.getPromptByUri.nsid) as { properties: object }).properties,
            ...(paramsSchema(READS.listPrompts.nsid) as { properties: object }).properties,
          },
        },
        response: {
          200: { oneOf: [READS.getPromptByUri.output, READS.listPrompts.output] },
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const query = request.query
      if (query.uri === undefined) return sendRead(app, reply, READS.listPrompts, query, 'rest')
      const mixed = listNames.filter((k) => query[k] !== undefined)
      if (mixed.length > 0) throw badRequest(`uri cannot be combined with ${mixed.join(', ')}`)
      return sendRead(app, reply, READS.getPromptByUri, query, 'rest')
    },
  )
}
