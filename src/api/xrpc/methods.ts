import type { FastifyInstance, FastifyReply } from 'fastify'
import { type Read, sendRead } from '../catalog/define.ts'
import { checkParams, type RawParams, XRPC_NAMESPACE } from '../catalog/lexicons.ts'
import { outputSchema } from '../catalog/output-schema.ts'
import { READS } from '../catalog/reads.ts'
import type { ChangeFeed } from '../changes/feed.ts'
import { parseInclude } from '../params.ts'

// What each XRPC query answers: the reads of the catalog (catalog/reads.ts), as REST answers
// them (the same check of the parameters, the same JSON, the same answer cache entries), and
// getChanges, a page of the change feed GET /v1/changes streams.

export interface XrpcMethod {
  /** The JSON schema of the answer (it documents the method). */
  output: object
  cache: Read['http'] | null
  handle(query: RawParams, reply: FastifyReply): Promise<unknown>
}

const CHANGES = `${XRPC_NAMESPACE}.getChanges`

function changesMethod(feed: ChangeFeed): XrpcMethod {
  return {
    output: outputSchema(CHANGES),
    cache: null,
    async handle(query, reply) {
      const p = checkParams(CHANGES, query)
      const withRecords = parseInclude(p.include as string | undefined)
      const page = await changesPage(feed, p.since as number, p.limit as number, withRecords)
      // The lines are the feed's own JSON text (reads.ts changeLine), joined as they are.
      return reply
        .header('cache-control', 'no-store')
        .type('application/json; charset=utf-8')
        .send(`{"changes":[${page.lines.join(',')}],"cursor":${page.cursor}}`)
    },
  }
}

/**
 * The lines GET /v1/changes streams for these parameters, from the same feed: changes of
 * repos hidden now are left out but still move the cursor. With records a page stops at one
 * chunk of them, since unlike the stream a page is held whole.
 */
async function changesPage(feed: ChangeFeed, since: number, limit: number, withRecords: boolean) {
  const most = withRecords ? Math.min(limit, feed.chunkSize(true)) : limit
  const lines: string[] = []
  let cursor = since
  for await (const page of feed.pages(since, most, withRecords)) {
    for (const line of page.lines) lines.push(line.trimEnd())
    cursor = page.cursor
  }
  return { lines, cursor }
}

/** `feed`: the change feed GET /v1/changes reads, shared so both page it alike. */
export function xrpcMethods(app: FastifyInstance, feed: ChangeFeed): Map<string, XrpcMethod> {
  const methods = new Map<string, XrpcMethod>()
  for (const read of Object.values(READS) as Read[])
    methods.set(read.nsid, {
      output: read.output,
      cache: read.http,
      handle: (query, reply) => sendRead(app, reply, read, query, 'xrpc'),
    })
  methods.set(CHANGES, changesMethod(feed))
  return methods
}
