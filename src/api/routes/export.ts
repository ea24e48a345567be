import { mkdtemp, open, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyPluginAsync } from 'fastify'
import { nsidsOf } from '../../config/config.ts'
import { EXPORT_TABLES, type ExportTable } from '../../db/read/export.ts'
import type { ExportFormat } from '../../export/files.ts'
import { badRequest, errorResponses } from '../http-errors.ts'

// GET /v1/export/{table}.{parquet|ndjson} (SPEC 13): one table of one snapshot, written whole
// to a private directory first, so the snapshot's transaction never waits on a slow client, a
// failure is a clean 503, and the length sent tells a cut download from a whole one.

/** Exports running at once in this process; past it a request is told to come back. */
const MAX_RUNNING = 2
/** An export costs this many requests of the client's rate limit. */
const EXPORT_WEIGHT = 100

const FILE = new RegExp(`^(${EXPORT_TABLES.join('|')})\\.(parquet|ndjson)$`)
const TYPES: Record<ExportFormat, string> = {
  parquet: 'application/vnd.apache.parquet',
  ndjson: 'application/x-ndjson; charset=utf-8',
}

export const exportRoutes: FastifyPluginAsync = async (app) => {
  const { db, config } = app.ctx
  let running = 0

  app.get<{ Params: { file: string } }>(
    '/v1/export/:file',
    {
      handlerTimeout: 600_000,
      config: {
        rateLimit: { max: Math.max(1, Math.floor(config.rateLimitPerMinute / EXPORT_WEIGHT)) },
      },
      schema: {
        tags: ['export'],
        summary: 'One table of a consistent snapshot of the visible state',
        description: `Tables: ${EXPORT_TABLES.join(', ')}; formats: parquet, ndjson. The x-snapshot-seq header is the change-feed seq the snapshot is consistent with: follow it with /v1/changes?since=<seq>.`,
        params: { type: 'object', properties: { file: { type: 'string' } } },
        produces: [TYPES.parquet, 'application/x-ndjson'],
        response: { ...errorResponses },
      },
    },
    async (request, reply) => {
      const m = FILE.exec(request.params.file)
      if (!m)
        throw badRequest(
          `no export ${JSON.stringify(request.params.file)}: ask for {${EXPORT_TABLES.join('|')}}.{parquet|ndjson}`,
        )
      const [, table, format] = m as unknown as [string, ExportTable, ExportFormat]
      if (running >= MAX_RUNNING)
        return reply
          .status(503)
          .header('retry-after', '30')
          .send({ error: 'ServiceUnavailable', message: 'exports are busy: try again shortly' })
      running++
      const dir = await mkdtemp(join(tmpdir(), 'prompt-appview-export-'))
      try {
        // The file writers (hyparquet-writer) load with the first export, not with every
        // process that serves the API.
        const { exportSnapshot } = await import('../../export/snapshot.ts')
        const manifest = await exportSnapshot(db, nsidsOf(config), {
          dir,
          format,
          tables: [table],
        })
        const [file] = manifest.files
        // Open, then remove: the open file is read to its end, and nothing is left behind
        // however the download ends.
        const body = (await open(join(dir, file.file))).createReadStream()
        reply
          .header('x-snapshot-seq', String(manifest.seq))
          .header('cache-control', 'no-store')
          .header('content-disposition', `attachment; filename="${file.file}"`)
          .header('content-length', String(file.bytes))
          .type(TYPES[format])
        return reply.send(body)
      } finally {
        await rm(dir, { recursive: true, force: true })
        running--
      }
    },
  )
}
