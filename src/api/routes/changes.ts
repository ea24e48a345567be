import { Readable } from 'node:stream'
import type { FastifyPluginAsync } from 'fastify'
import type { ChangeFeed, FeedPage } from '../changes/feed.ts'
import { errorResponses } from '../http-errors.ts'
import { INCLUDE_PARAM, integerParam, parseInclude, SINCE } from '../params.ts'

const LIMIT = integerParam(
  { def: 1000, min: 1, max: 10_000 },
  'Most lines, 1..10000 in plain decimal digits, default 1000',
  'limit must be an integer from 1 to 10000, in plain decimal digits',
)

// The change feed streams keyset chunks on seq as they are read, so a long answer never sits
// in memory; seqs commit in order, so resuming after the last seq read misses nothing.
export const changesRoutes: FastifyPluginAsync<{ feed: ChangeFeed }> = async (app, { feed }) => {
  app.get<{ Querystring: { since?: string; limit?: string; include?: string } }>(
    '/v1/changes',
    {
      // Long answers to slow clients are fine; the per-request timeout is for stuck handlers.
      handlerTimeout: 120_000,
      schema: {
        tags: ['changes'],
        summary: 'Change feed (NDJSON), oldest first',
        description:
          'One JSON object per line: {"seq","op":"upsert"|"delete","collection","uri","cid","flags","at"}. Resume with since = the last seq read. With include=record, each upsert line also carries "record": the record with that cid (a prompt\'s older version from its revision history), else null with "superseded": true when that version is not kept. Live: /v1/changes/subscribe (WebSocket).',
        querystring: {
          type: 'object',
          properties: { since: SINCE.schema, limit: LIMIT.schema, include: INCLUDE_PARAM },
        },
        produces: ['application/x-ndjson'],
        response: {
          200: {
            description: 'NDJSON change rows',
            content: { 'application/x-ndjson': { schema: { type: 'string' } } },
          },
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const since = SINCE.parse(request.query.since)
      const limit = LIMIT.parse(request.query.limit)
      const withRecords = parseInclude(request.query.include)
      // The first chunk is read before the status goes out, so a database failure is
      // still a clean error (503 while the database is down) rather than a truncated 200.
      const pages = feed.pages(since, limit, withRecords)
      const first = await pages.next()
      reply.header('cache-control', 'no-store')
      reply.type('application/x-ndjson; charset=utf-8')
      return reply.send(Readable.from(stream(first, pages), { objectMode: false }))
    },
  )
}

/** The pages' text as it is read: the next read waits until the stream has room. */
async function* stream(first: IteratorResult<FeedPage>, pages: AsyncGenerator<FeedPage>) {
  for (let page = first; !page.done; page = await pages.next())
    if (page.value.lines.length > 0) yield page.value.lines.join('')
}
