import { isValidNsid } from '@atproto/syntax'
import type { FastifyPluginAsync, FastifyReply } from 'fastify'
import { paramsSchema, QUERIES, type RawParams } from '../catalog/lexicons.ts'
import type { ChangeFeed } from '../changes/feed.ts'
import { badRequest } from '../http-errors.ts'
import { errorResponses } from '../schemas.ts'
import { serveDidDocument } from './did-document.ts'
import { xrpcMethods } from './methods.ts'

// GET /xrpc/{nsid}: the reads of SPEC section 6 as the XRPC queries of lexicons/…/appview/.
//
// Fastify routes rather than an XRPC server library: @atproto/xrpc-server is an Express app
// that must hijack the reply (losing this app's compression, CORS, cache headers, 503 and
// `inject`), and @atcute/xrpc-server validates with @atcute/lexicons, while SPEC 13 names
// @atproto/lexicon. The app's `{"error","message"}` is also the XRPC error shape.

const ANY_METHOD = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH'] as const

export const xrpcRoutes: FastifyPluginAsync<{ feed: ChangeFeed }> = async (app, opts) => {
  const methods = xrpcMethods(app, opts.feed)
  for (const [nsid, def] of QUERIES) {
    const method = methods.get(nsid)
    if (!method) throw new Error(`no handler for the query lexicon ${nsid}`)
    app.get<{ Querystring: RawParams }>(
      `/xrpc/${nsid}`,
      {
        ...(method.cache ? { config: method.cache } : {}),
        // The lexicon checks (catalog/lexicons.ts): the JSON schema only documents them.
        validatorCompiler: () => () => true,
        schema: {
          tags: ['xrpc'],
          summary: `XRPC query ${nsid}`,
          description: def.description,
          querystring: paramsSchema(nsid),
          response: { 200: method.output, ...errorResponses },
        },
      },
      async (request, reply) => method.handle(request.query, reply),
    )
  }
  for (const nsid of methods.keys())
    if (!QUERIES.has(nsid)) throw new Error(`no query lexicon for the handler ${nsid}`)

  // Everything else under /xrpc/: a path that is no NSID, a query called with another
  // method, and the methods this service does not implement (XRPC's 501).
  app.route<{ Params: { '*': string } }>({
    method: [...ANY_METHOD],
    url: '/xrpc/*',
    schema: { hide: true },
    handler: async (request, reply: FastifyReply) => {
      const nsid = request.params['*']
      if (!isValidNsid(nsid))
        throw badRequest('the path after /xrpc/ is not an NSID: call XRPC methods at /xrpc/{nsid}')
      if (QUERIES.has(nsid))
        return reply
          .status(405)
          .header('allow', 'GET, HEAD')
          .send({
            error: 'InvalidRequest',
            message: `${nsid} is a query: call it with GET, not ${request.method}`,
          })
      return reply.status(501).send({
        error: 'MethodNotImplemented',
        message: `this service does not implement ${nsid}`,
      })
    },
  })

  await serveDidDocument(app)
}
