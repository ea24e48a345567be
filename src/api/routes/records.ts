import type { FastifyInstance, FastifyPluginAsync, FastifyReply } from 'fastify'
import { cachedAnswer, sendAnswer, serializerFor } from '../answer-cache-plugin.ts'
import { agentLookup, conversationAt, lookupKey } from '../queries.ts'
import { agentSummarySchema, conversationSchema, lookupRoute, type RepoRkey } from '../schemas.ts'

// Conversations and agents: the records prompts are checked against.

/**
 * One conversation (queries.ts conversationLookup, with the answer cached by its key), for
 * GET /v1/conversations/:did/:rkey and XRPC getConversation.
 */
export async function sendConversation(
  app: FastifyInstance,
  reply: FastifyReply,
  params: RepoRkey,
): Promise<FastifyReply> {
  const q = app.queries
  const key = await lookupKey(q, params, 'conversation')
  // Built from the conversation's row and its slot's prompt: both in its own repo.
  const answer = await cachedAnswer(
    app.answers,
    `conversation ${key.did} ${key.rkey}`,
    () => conversationAt(q, key),
    serializerFor(reply, conversationSchema),
    () => [key.did],
  )
  return sendAnswer(reply, answer)
}

export const recordRoutes: FastifyPluginAsync = async (app) => {
  const q = app.queries

  app.get<{ Params: RepoRkey }>(
    '/v1/conversations/:did/:rkey',
    lookupRoute(
      ['conversations'],
      'One conversation, with the prompt in its slot',
      conversationSchema,
    ),
    async (request, reply) => sendConversation(app, reply, request.params),
  )

  app.get<{ Params: RepoRkey }>(
    '/v1/agents/:did/:rkey',
    lookupRoute(
      ['agents'],
      'One agent record and counts of the visible prompts naming it',
      agentSummarySchema,
      { description: '404 only when the agent is neither indexed nor named by a visible prompt.' },
    ),
    async (request) => agentLookup.run(q, { params: request.params, query: {} }),
  )
}
