import { sql } from 'drizzle-orm'
import type { Database } from '../../src/db/client.ts'
import { getCursor } from '../../src/db/read/stats.ts'
import { readStoredCursor } from '../../src/db/writes.ts'
import { IngestPipeline } from '../../src/indexer/pipeline.ts'
import { createJetstreamSource } from '../../src/ingest/jetstream/v1.ts'
import { createJetstreamV2Source, type JetstreamV2Options } from '../../src/ingest/jetstream/v2.ts'
import type { Source } from '../../src/ingest/source.ts'
import { testContext } from './context.ts'
import { NSIDS } from './events.ts'

// Jetstream (either wire) → pipeline → database in this process, and a digest of the
// canonical state two runs must agree on.

export type Wire = 'v1' | 'v2'

export function startIndexer(
  db: Database,
  wire: Wire,
  url: string,
  o: Partial<JetstreamV2Options> = {},
) {
  const ctx = testContext(db)
  const common = {
    url,
    wantedCollections: ['xyz.quasigod.lab.letta.*'],
    collections: Object.values(NSIDS),
    logger: ctx.logger,
    metrics: ctx.metrics,
    verifyHandle: o.verifyHandle ?? (async () => null),
    backoffBaseMs: 20,
    backoffMaxMs: 100,
  }
  const source: Source =
    wire === 'v2'
      ? createJetstreamV2Source({ ...common, syncQuietSeconds: 10, ...o })
      : createJetstreamSource({ ...common, rewindSeconds: 1 })
  const pipeline = new IngestPipeline(ctx, {
    source: 'jetstream',
    key: source.key,
    provenance: source.provenance,
    batchSize: 100,
    batchDelayMs: 5,
    queueSize: 300,
    cursorIntervalMs: 50,
  })
  const abort = new AbortController()
  const done = (async () => {
    const start = (await readStoredCursor(db, 'jetstream', source.key))?.cursor ?? null
    const writer = pipeline.run()
    await source.run(pipeline, start, abort.signal).finally(() => pipeline.stop())
    await writer
  })()
  return {
    ctx,
    source,
    pipeline,
    cursor: () => getCursor(db, 'jetstream', source.key),
    stop: async () => {
      abort.abort()
      await done
    },
  }
}

export async function recordRows(db: Database, table = 'prompts') {
  return db.rows<{
    rkey: string
    rev: string
    cid: string | null
    deleted: boolean
    recompiles?: number
  }>(sql`SELECT * FROM ${sql.raw(table)} ORDER BY rkey`)
}

export async function changeRows(db: Database) {
  return db.rows<{ rkey: string; op: string }>(sql`SELECT rkey, op FROM changes ORDER BY seq`)
}
