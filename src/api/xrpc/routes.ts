import { isValidNsid } from '@atproto/syntax'
import type { FastifyPluginAsync, FastifyReply } from 'fastify'
import { type Read, sendRead } from '../catalog/define.ts'
import {
  checkParams,
  paramsSchema,
  QUERIES,
  type RawParams,
  XRPC_NAMESPACE,
} from '../catalog/lexicons.ts'
import { outputSchema } from '../catalog/output-schema.ts'
import { READS } from '../catalog/reads.ts'
import type { ChangeFeed } from '../changes/feed.ts'
import { badRequest, errorResponses } from '../http-errors.ts'
import { parseInclude } from '../params.ts'
import { serveDidDocument } from './did-document.ts'

// GET /xrpc/{nsid}: the reads of the catalog as the XRPC queries of lexicons/…/appview/, as
// REST answers them (the same check, JSON and answer cache entries), and getChanges, a page
// of the change feed GET /v1/changes streams.
//
// Fastify routes rather than an XRPC server library: @atproto/xrpc-server is an Express app
// that must hijack the reply (losing this app's compression, CORS, cache headers, 503 and
// `inject`), and @atcute/xrpc-server validates with @atcute/lexicons, while SPEC 13 names
// @atproto/lexicon. The app's `{"error","message"}` is also the XRPC error shape.

interface XrpcMethod {
  /** The JSON schema of the answer (it documents the method). */
  output: object
  cache: Read['http'] | null
  handle(query: RawParams, reply: FastifyReply): Promise<unknown>
}

const CHANGES = `${XRPC_NAMESPACE}.getChanges`

/**
 * The lines GET /v1/changes streams for these parameters, from the same feed: changes of
 * repos hidden now are left out but still move the cursor. With records a page stops at one
 * chunk of them, since unlike the stream a page is held whole.
 */
async function changesPage(feed: ChangeFeed, query: RawParams, reply: FastifyReply) {
  const p = checkParams(CHANGES, query)
  const withRecords = parseInclude(p.include as string | undefined)
  const limit = p.limit as number
  const most = withRecords ? Math.min(limit, feed.chunkSize(true)) : limit
  const lines: string[] = []
  let cursor = p.since as number
  for await (const page of feed.pages(cursor, most, withRecords)) {
    for (const line of page.lines) lines.push(line.trimEnd())
    cursor = page.cursor
  }
  // The lines are the feed's own JSON text, joined as they are.
  return reply
    .header('cache-control', 'no-store')
    .type('application/json; charset=utf-8')
    .send(`{"changes":[${lines.join(',')}],"cursor":${cursor}}`)
}

const ANY_METHOD = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH'] as const

export const xrpcRoutes: FastifyPluginAsync<{ feed: ChangeFeed }> = async (app, { feed }) => {
  const methods = new Map<string, XrpcMethod>()
  for (const read of Object.values(READS) as Read[])
    methods.set(read.nsid, {
      output: read.output,
      cache: read.http,
      handle: (query, reply) => sendRead(app, reply, read, query, 'xrpc'),
    })
  methods.set(CHANGES, {
    output: outputSchema(CHANGES),
    cache: null,
    handle: (query, reply) => changesPage(feed, query, reply),
  })
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
