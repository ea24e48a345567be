import type { FastifyPluginAsync } from 'fastify'
import { cachedAnswer, sendAnswer, serializerFor } from '../answer-cache-plugin.ts'
import { agentLookup, conversationAt, lookupKey } from '../queries.ts'
import { agentSummarySchema, conversationSchema, lookupRoute, type RepoRkey } from '../schemas.ts'

// Conversations and agents: the records prompts are checked against.
export const recordRoutes: FastifyPluginAsync = async (app) => {
  const q = app.queries

  app.get<{ Params: RepoRkey }>(
    '/v1/conversations/:did/:rkey',
    lookupRoute(
      ['conversations'],
      'One conversation, with the prompt in its slot',
      conversationSchema,
    ),
    async (request, reply) => {
      // queries.ts conversationLookup, with the answer cached by its key.
      const key = await lookupKey(q, request.params, 'conversation')
      // Built from the conversation's row and its slot's prompt: both in its own repo.
      const answer = await cachedAnswer(
        app.answers,
        `conversation ${key.did} ${key.rkey}`,
        () => conversationAt(q, key),
        serializerFor(reply, conversationSchema),
        () => [key.did],
      )
      return sendAnswer(reply, answer)
    },
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
