import { Readable } from 'node:stream'
import type { FastifyPluginAsync } from 'fastify'
import { nsidsOf } from '../../config.ts'
import {
  type ChangeRow,
  type CurrentRecord,
  type RecordTable,
  readChanges,
  readCurrentRecords,
} from '../../db/read/changes.ts'
import { badRequest } from '../http-errors.ts'
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
  // With records a chunk holds up to this many of them (a prompt may be 200 kB), so an
  // answer's memory stays bounded whatever `limit` asks for.
  const recordPageSize = Math.min(pageSize, 50)

  // The table each collection's records live in, for include=record.
  const tables = new Map<string, RecordTable>([
    [config.promptNsid, 'prompts'],
    [nsidsOf(config).conversation, 'conversations'],
    [nsidsOf(config).agent, 'agents'],
  ])

  /** The current records of a chunk's upsert lines, by `collection did rkey`. */
  async function recordsOf(rows: ChangeRow[]): Promise<Map<string, CurrentRecord>> {
    const out = new Map<string, CurrentRecord>()
    for (const [collection, table] of tables) {
      const keys = rows.filter((r) => r.collection === collection && r.op !== 'delete')
      for (const [k, v] of await readCurrentRecords(db, table, keys))
        out.set(`${collection} ${k}`, v)
    }
    return out
  }

  app.get<{ Querystring: { since?: string; limit?: string; include?: string } }>(
    '/v1/changes',
    {
      // Long answers to slow clients are fine; the per-request timeout is for stuck handlers.
      handlerTimeout: 120_000,
      schema: {
        tags: ['changes'],
        summary: 'Change feed (NDJSON), oldest first',
        description:
          'One JSON object per line: {"seq","op":"upsert"|"delete","collection","uri","cid","flags","at"}. Resume with since = the last seq read. With include=record, each upsert line also carries "record": the record with that cid while it is the current version, else null with "superseded": true.',
        querystring: {
          type: 'object',
          properties: {
            since: SINCE.schema,
            limit: LIMIT.schema,
            include: {
              type: 'string',
              description: '`record`: upsert lines carry the record with their cid',
            },
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
      const { include } = request.query
      if (include !== undefined && include !== 'record')
        throw badRequest('include must be record (the only thing a change line can include)')
      // The first chunk is read before the status goes out, so a database failure is
      // still a clean error (503 while the database is down) rather than a truncated 200.
      const chunkSize = include ? recordPageSize : pageSize
      const asked = Math.min(chunkSize, limit)
      const first = await readChanges(db, since, asked)
      const firstRecords = include ? await recordsOf(first) : null
      reply.header('cache-control', 'no-store')
      reply.type('application/x-ndjson; charset=utf-8')
      const lines = stream(first, firstRecords, asked, limit, chunkSize)
      return reply.send(Readable.from(lines, { objectMode: false }))
    },
  )

  /** `records`: null without include=record, else the current records of `first`'s lines. */
  async function* stream(
    first: ChangeRow[],
    firstRecords: Map<string, CurrentRecord> | null,
    firstAsked: number,
    limit: number,
    chunkSize: number,
  ): AsyncGenerator<string> {
    let chunk = first
    let records = firstRecords
    let asked = firstAsked
    let sent = 0
    for (;;) {
      const shown = chunk.filter((row) => !row.withheld)
      const line = (row: ChangeRow) =>
        changeLine(
          row,
          config.promptNsid,
          records ? (records.get(`${row.collection} ${row.did} ${row.rkey}`) ?? null) : undefined,
        )
      if (shown.length > 0) yield shown.map(line).join('')
      sent += shown.length
      // A short chunk is the end of the table as of that read; a later call picks up the rest.
      if (chunk.length < asked || sent >= limit) return
      asked = Math.min(chunkSize, limit - sent)
      chunk = await readChanges(db, chunk[chunk.length - 1].seq, asked)
      if (records) records = await recordsOf(chunk)
    }
  }
}
