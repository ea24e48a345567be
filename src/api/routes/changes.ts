import { Readable } from 'node:stream'
import type { FastifyPluginAsync } from 'fastify'
import { type ChangeRow, readChanges } from '../../db/read/changes.ts'
import { limitParam, SINCE } from '../params.ts'
import { changeLine } from '../reads.ts'
import { errorResponses } from '../schemas.ts'

export const CHANGES_DEFAULT_LIMIT = 1000
export const CHANGES_MAX_LIMIT = 10_000
const LIMIT = limitParam({
  def: CHANGES_DEFAULT_LIMIT,
  max: CHANGES_MAX_LIMIT,
  description: `Most lines, 1..${CHANGES_MAX_LIMIT} in plain decimal digits, default ${CHANGES_DEFAULT_LIMIT}`,
})

// The change feed streams: rows are read in keyset chunks on seq and written as they
// come, so a 10 000-line answer never sits in memory whole, and a slow client slows the
// reads (the stream pulls the next chunk only when it has room). Seqs are assigned and
// committed in order under the writers' lock, so resuming after the last seq read
// misses nothing and repeats nothing.
export const changesRoutes: FastifyPluginAsync<{ pageSize: number }> = async (app, opts) => {
  const { db, config } = app.ctx
  const pageSize = opts.pageSize

  app.get<{ Querystring: { since?: string; limit?: string } }>(
    '/v1/changes',
    {
      // Long answers to slow clients are fine; the per-request timeout is for stuck handlers.
      handlerTimeout: 120_000,
      schema: {
        tags: ['changes'],
        summary: 'Change feed (NDJSON), oldest first',
        description:
          'One JSON object per line: {"seq","op":"upsert"|"delete","collection","uri","cid","flags","at"}. Resume with since = the last seq read.',
        querystring: {
          type: 'object',
          properties: {
            since: SINCE.schema,
            limit: LIMIT.schema,
          },
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
      // The first chunk is read before the status goes out, so a database failure is
      // still a clean error (503 while the database is down) rather than a truncated 200.
      const asked = Math.min(pageSize, limit)
      const first = await readChanges(db, since, asked)
      reply.header('cache-control', 'no-store')
      reply.type('application/x-ndjson; charset=utf-8')
      return reply.send(Readable.from(stream(first, asked, limit), { objectMode: false }))
    },
  )

  async function* stream(
    first: ChangeRow[],
    firstAsked: number,
    limit: number,
  ): AsyncGenerator<string> {
    let chunk = first
    let asked = firstAsked
    let sent = 0
    for (;;) {
      const shown = chunk.filter((row) => !row.withheld)
      if (shown.length > 0) yield shown.map((row) => changeLine(row, config.promptNsid)).join('')
      sent += shown.length
      // A short chunk is the end of the table as of that read; a later call picks up the rest.
      if (chunk.length < asked || sent >= limit) return
      asked = Math.min(pageSize, limit - sent)
      chunk = await readChanges(db, chunk[chunk.length - 1].seq, asked)
    }
  }
}
