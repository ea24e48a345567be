import type { FastifyInstance, FastifyPluginAsync, FastifyReply } from 'fastify'
import { ANY_REPO } from '../answer-cache.ts'
import { cachedAnswer, sendAnswer, serializerFor } from '../answer-cache-plugin.ts'
import { LIST_CACHE } from '../http-cache.ts'
import { badRequest } from '../http-errors.ts'
import { type ListFilterQuery, listFilterProperties, parseListFilters } from '../list-filters.ts'
import { type Actor, parseActor, parseRecordUri, parseRkey } from '../params.ts'
import { promptAnswer, repoOf, revisionPage } from '../queries.ts'
import { spliceRecord } from '../raw-record.ts'
import { listPrompts, type PromptAnswer } from '../reads.ts'
import { revisionPageSchema } from '../revision-schemas.ts'
import {
  errorResponses,
  lookupRoute,
  promptPageSchema,
  promptSchema,
  type RepoRkey,
} from '../schemas.ts'

interface ListQuery extends ListFilterQuery {
  uri?: string
}

const tags = ['prompts']

export const promptRoutes: FastifyPluginAsync = async (app) => {
  const q = app.queries
  const { nsids } = q

  app.get<{ Params: RepoRkey }>(
    '/v1/prompts/:did/:rkey',
    lookupRoute(tags, 'One prompt by repo and record key', promptSchema),
    async (request, reply) =>
      sendPrompt(app, reply, parseActor(request.params.did, 'did'), parseRkey(request.params.rkey)),
  )

  app.get<{ Querystring: ListQuery }>(
    '/v1/prompts',
    {
      config: LIST_CACHE,
      schema: {
        tags,
        summary: 'One prompt by at-uri, or a filtered page of prompts',
        description:
          "With `uri` (the prompt's at-uri or its conversation's): that prompt. Otherwise a page ordered by rkey descending, then did; items leave out content and coreMemory and carry contentBytes.",
        querystring: {
          type: 'object',
          properties: {
            uri: {
              type: 'string',
              maxLength: 8192,
              description: 'at-uri of a prompt or of its conversation',
            },
            ...listFilterProperties,
          },
        },
        response: { 200: { oneOf: [promptSchema, promptPageSchema] }, ...errorResponses },
      },
    },
    async (request, reply) => {
      const query = request.query
      if (query.uri !== undefined) {
        const listParams = (
          Object.keys(listFilterProperties) as Array<keyof ListFilterQuery>
        ).filter((k) => query[k] !== undefined)
        if (listParams.length > 0)
          throw badRequest(`uri cannot be combined with ${listParams.join(', ')}`)
        const ref = parseRecordUri(query.uri, 'uri', [nsids.prompt, nsids.conversation])
        return sendPrompt(app, reply, ref.actor, ref.rkey)
      }
      return sendPromptPage(app, reply, query)
    },
  )

  app.get<{ Params: RepoRkey; Querystring: { limit?: string; cursor?: string } }>(
    '/v1/prompts/:did/:rkey/revisions',
    lookupRoute(tags, 'Revision history of one prompt, newest first', revisionPageSchema, {
      querystring: revisionPage.schema.querystring,
    }),
    async (request) => revisionPage.run(q, { params: request.params, query: request.query }),
  )
}

/**
 * One prompt's answer, from the answer cache or built and stored there. GET
 * /v1/prompts/:did/:rkey, `?uri=` and XRPC getPrompt and getPromptByUri share it, and so
 * share their entries: the same JSON under the same key.
 */
export async function sendPrompt(
  app: FastifyInstance,
  reply: FastifyReply,
  actor: Actor,
  rkey: string,
): Promise<FastifyReply> {
  const q = app.queries
  const did = await repoOf(q, actor, 'prompt')
  const answer = await cachedAnswer(
    app.answers,
    `prompt ${did} ${rkey}`,
    () => promptAnswer(q, did, rkey),
    spliceRecord<PromptAnswer>(serializerFor(reply, promptSchema)),
    ({ answer }) => promptRepos(answer),
  )
  return sendAnswer(reply, answer)
}

/**
 * A filtered page of prompts (queries.ts promptList, with the page cached: the same parse,
 * the same read), for GET /v1/prompts and XRPC listPrompts.
 */
export async function sendPromptPage(
  app: FastifyInstance,
  reply: FastifyReply,
  query: ListFilterQuery,
): Promise<FastifyReply> {
  const { db, nsids } = app.queries
  const parsed = await parseListFilters(db, nsids, query)
  // A handle nobody here has names no prompts: an empty page, like an unknown DID.
  if (!parsed) return serializeWith(reply, promptPageSchema, { items: [] })
  // Keyed by the parsed filters (handles resolved), so a renamed handle is a new key;
  // a page may hold any repo's prompts, so any change drops it.
  const answer = await cachedAnswer(
    app.answers,
    `list ${JSON.stringify(parsed)}`,
    () => listPrompts(db, nsids, parsed.filters, parsed.limit),
    serializerFor(reply, promptPageSchema),
    () => [ANY_REPO],
  )
  return sendAnswer(reply, answer)
}

/**
 * `/v1/prompts` answers two shapes; the route's `oneOf` documents both, and each answer is
 * serialized with its own compiled schema rather than by trying the branches in turn.
 */
function serializeWith(reply: FastifyReply, schema: object, payload: unknown): FastifyReply {
  return reply
    .type('application/json; charset=utf-8')
    .serializer(reply.compileSerializationSchema(schema as Record<string, unknown>))
    .send(payload)
}

/** The repos a prompt's answer is built from: its own, and its agent's (agent.exists, reasons). */
function promptRepos(view: PromptAnswer): string[] {
  const agentRepo = view.agent.uri?.startsWith('at://')
    ? view.agent.uri.slice(5).split('/')[0]
    : null
  return agentRepo && agentRepo !== view.did ? [view.did, agentRepo] : [view.did]
}
