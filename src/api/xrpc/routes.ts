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

// GET /xrpc/{nsid}: the catalog's reads as the XRPC queries of lexicons/…/appview/, answered
// as REST answers them, and getChanges, a page of the change feed. Fastify routes, not an XRPC
// server library: @atproto/xrpc-server must hijack the reply (losing compression, CORS, cache
// headers, 503 and `inject`), and @atcute/xrpc-server validates with @atcute/lexicons, while
// SPEC 13 names @atproto/lexicon. The app's `{"error","message"}` is also XRPC's error shape.

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

export const xrpcRoutes: FastifyPluginAsync<{ feed: ChangeFeed }> = async (app, { feed }) => {
  const reads = new Map((Object.values(READS) as Read[]).map((read) => [read.nsid, read]))
  for (const [nsid, def] of QUERIES) {
    const read = reads.get(nsid)
    if (!read && nsid !== CHANGES) throw new Error(`no handler for the query lexicon ${nsid}`)
    app.get<{ Querystring: RawParams }>(
      `/xrpc/${nsid}`,
      {
        ...(read ? { config: read.http } : {}),
        // The lexicon checks (catalog/lexicons.ts): the JSON schema only documents them.
        validatorCompiler: () => () => true,
        schema: {
          tags: ['xrpc'],
          summary: `XRPC query ${nsid}`,
          description: def.description,
          querystring: paramsSchema(nsid),
          response: { 200: read?.output ?? outputSchema(CHANGES), ...errorResponses },
        },
      },
      async (request, reply) =>
        read
          ? sendRead(app, reply, read, request.query, 'xrpc')
          : changesPage(feed, request.query, reply),
    )
  }
  for (const nsid of [...reads.keys(), CHANGES])
    if (!QUERIES.has(nsid)) throw new Error(`no query lexicon for the handler ${nsid}`)

  // Everything else under /xrpc/: a path that is no NSID, a query called with another
  // method, and the methods this service does not implement (XRPC's 501).
  app.route<{ Params: { '*': string } }>({
    method: ['GET', 'POST', 'PUT', 'DELETE', 'PATCH'],
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
