import type { FastifyPluginAsync } from 'fastify'
import { nsidsOf } from '../../config.ts'
import { cachedAnswer, sendAnswer, serializerFor } from '../answer-cache-plugin.ts'
import { notFound } from '../http-errors.ts'
import { parseActor, parseRkey } from '../params.ts'
import { getAgentSummary, getConversation, resolveActor } from '../reads.ts'
import { agentSummarySchema, conversationSchema, lookupRoute, type RepoRkey } from '../schemas.ts'

// Conversations and agents: the records prompts are checked against.
export const recordRoutes: FastifyPluginAsync = async (app) => {
  const { db, config } = app.ctx
  const nsids = nsidsOf(config)

  const keyOf = async (params: RepoRkey, what: string): Promise<{ did: string; rkey: string }> => {
    const actor = parseActor(params.did, 'did')
    const rkey = parseRkey(params.rkey)
    const did = await resolveActor(db, actor)
    if (did === null)
      throw notFound(`no such ${what}: handle ${params.did} is not known to this index`)
    return { did, rkey }
  }

  app.get<{ Params: RepoRkey }>(
    '/v1/conversations/:did/:rkey',
    lookupRoute(
      ['conversations'],
      'One conversation, with the prompt in its slot',
      conversationSchema,
    ),
    async (request, reply) => {
      const { did, rkey } = await keyOf(request.params, 'conversation')
      // Built from the conversation's row and its slot's prompt: both in its own repo.
      const answer = await cachedAnswer(
        app.answers,
        `conversation ${did} ${rkey}`,
        () => getConversation(db, nsids, did, rkey),
        serializerFor(reply, conversationSchema),
        () => [did],
      )
      if (!answer) throw notFound(`no conversation at at://${did}/${nsids.conversation}/${rkey}`)
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
    async (request) => {
      const { did, rkey } = await keyOf(request.params, 'agent')
      const summary = await getAgentSummary(db, nsids, did, rkey)
      if (!summary)
        throw notFound(`no agent at at://${did}/${nsids.agent}/${rkey}, and no prompt names it`)
      return summary
    },
  )
}
