import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startJetstreamV2Server } from '../../demo-network/jetstream-v2-server.ts'
import { buildApp } from '../../src/api/app.ts'
import type { Database } from '../../src/db/client.ts'
import { createJetstreamV2Source } from '../../src/ingest/jetstream/v2.ts'
import { seqCursor } from '../../src/model/cursor.ts'
import { testContext } from '../helpers/context.ts'
import { createTestDatabase } from '../helpers/db.ts'
import { COLLECTIONS } from '../helpers/ingest-kit.ts'

// SPEC 5: a CursorTooOld from Jetstream v2 shows in /v1/stats (`ingest.gap`) and in the
// /readyz details, with what the operator should do; readiness itself stays (the API serves).

let db: Database
beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(async () => {
  await db?.close()
})

describe('ingestion gap reporting', () => {
  it('CursorTooOld reaches /v1/stats and /readyz', async () => {
    const server = await startJetstreamV2Server()
    server.floor = 100
    const ctx = testContext(db)
    const source = createJetstreamV2Source({
      url: server.url,
      wantedCollections: ['xyz.quasigod.lab.letta.*'],
      collections: COLLECTIONS,
      logger: ctx.logger,
      metrics: ctx.metrics,
      zstd: false,
    })
    const ingest = { source: 'jetstream', key: source.key, gap: () => source.gap ?? null }
    const app = await buildApp(ctx, { ingest, isReady: () => true })
    try {
      const clean = await app.inject('/readyz')
      expect(clean.json()).toEqual({ ok: true })
      expect((await app.inject('/v1/stats')).json().ingest.gap).toBeNull()
      await source.run({ push: async () => {} }, seqCursor(5), new AbortController().signal)
      const stats = (await app.inject('/v1/stats')).json()
      expect(stats.ingest.gap).toMatchObject({ reason: 'CursorTooOld', cursor: 5 })
      expect(stats.ingest.gap.action).toContain('prompt-appview backfill')
      const ready = await app.inject('/readyz')
      expect(ready.statusCode).toBe(200)
      expect(ready.json().details.ingest.gap).toMatchObject({ reason: 'CursorTooOld' })
    } finally {
      await app.close()
      await server.close()
    }
  })
})
