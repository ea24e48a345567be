import type { FastifyPluginAsync, FastifyReply } from 'fastify'
import { nsidsOf } from '../../config.ts'
import { batchedPromptAnswers } from '../../db/read/prompts.ts'
import { ANY_REPO, type CachedAnswer } from '../answer-cache.ts'
import { cachedAnswer, sendAnswer, serializerFor } from '../answer-cache-plugin.ts'
import { LIST_CACHE } from '../http-cache.ts'
import { badRequest, notFound } from '../http-errors.ts'
import { type ListFilterQuery, listFilterProperties, parseListFilters } from '../list-filters.ts'
import {
  type Actor,
  decodeRevCursor,
  PAGE_LIMIT,
  parseActor,
  parseRecordUri,
  parseRkey,
} from '../params.ts'
import { spliceRecord } from '../raw-record.ts'
import { getPromptAnswer, listPrompts, type PromptAnswer, resolveActor } from '../reads.ts'
import { getRevisions } from '../revision-reads.ts'
import { revisionPageSchema } from '../revision-schemas.ts'
import {
  cursorParam,
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
  const { db, config } = app.ctx
  const nsids = nsidsOf(config)
  const readAnswerRow = batchedPromptAnswers(db)

  /** A lookup's repo: a handle the index does not know is as absent as a missing record. */
  const repoOf = async (actor: Actor, what: string): Promise<string> => {
    const did = await resolveActor(db, actor)
    if (did === null)
      throw notFound(
        `${what}: handle ${actor.kind === 'handle' ? actor.handle : ''} is not known to this index`,
      )
    return did
  }

  /** One prompt's answer, from the answer cache or built and stored there. */
  const lookup = async (reply: FastifyReply, actor: Actor, rkey: string) => {
    const did = await repoOf(actor, 'no such prompt')
    const answer = await cachedAnswer(
      app.answers,
      `prompt ${did} ${rkey}`,
      () => getPromptAnswer(readAnswerRow, nsids, did, rkey),
      spliceRecord<PromptAnswer>(serializerFor(reply, promptSchema)),
      ({ answer }) => promptRepos(answer),
    )
    if (!answer) throw notFound(`no prompt at at://${did}/${nsids.prompt}/${rkey}`)
    return sendAnswer(reply, answer)
  }

  app.get<{ Params: RepoRkey }>(
    '/v1/prompts/:did/:rkey',
    lookupRoute(tags, 'One prompt by repo and record key', promptSchema),
    async (request, reply) =>
      lookup(reply, parseActor(request.params.did, 'did'), parseRkey(request.params.rkey)),
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
      const q = request.query
      if (q.uri !== undefined) {
        const listParams = (
          Object.keys(listFilterProperties) as Array<keyof ListFilterQuery>
        ).filter((k) => q[k] !== undefined)
        if (listParams.length > 0)
          throw badRequest(`uri cannot be combined with ${listParams.join(', ')}`)
        const ref = parseRecordUri(q.uri, 'uri', [nsids.prompt, nsids.conversation])
        return lookup(reply, ref.actor, ref.rkey)
      }
      const parsed = await parseListFilters(db, nsids, q)
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
      return sendAnswer(reply, answer as CachedAnswer)
    },
  )

  app.get<{ Params: RepoRkey; Querystring: { limit?: string; cursor?: string } }>(
    '/v1/prompts/:did/:rkey/revisions',
    lookupRoute(tags, 'Revision history of one prompt, newest first', revisionPageSchema, {
      querystring: {
        type: 'object',
        properties: { limit: PAGE_LIMIT.schema, cursor: cursorParam },
      },
    }),
    async (request) => {
      const actor = parseActor(request.params.did, 'did')
      const rkey = parseRkey(request.params.rkey)
      const limit = PAGE_LIMIT.parse(request.query.limit)
      const before =
        request.query.cursor === undefined ? null : decodeRevCursor(request.query.cursor)
      const did = await repoOf(actor, 'no such prompt')
      const page = await getRevisions(db, did, rkey, before, limit)
      if (!page) throw notFound(`no prompt at at://${did}/${nsids.prompt}/${rkey}`)
      return { uri: `at://${did}/${nsids.prompt}/${rkey}`, ...page }
    },
  )
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
