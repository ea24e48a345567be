import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { JetstreamEvent } from '../../demo-network/generator.ts'
import {
  type JetstreamJson,
  type JetstreamServer,
  startJetstreamServer,
} from '../../demo-network/jetstream-server.ts'
import type { Database } from '../../src/db/client.ts'
import { getCursor } from '../../src/db/read/stats.ts'
import { waitFor } from '../helpers/cli.ts'
import { createTestDatabase } from '../helpers/db.ts'
import { NSIDS } from '../helpers/events.ts'
import { startIndexer as startWireIndexer } from '../helpers/jetstream-v2-indexer.ts'
import { createReferenceModel } from '../helpers/reference-model.ts'
import { testTraffic } from '../helpers/traffic.ts'

// Jetstream → pipeline → database, through a local Jetstream that drops connections
// mid-stream, and an indexer that is stopped and started again: no gap, nothing counted
// twice, and the final state is the reference model's.

let db: Database
let server: JetstreamServer
let events: JetstreamEvent[]

beforeAll(async () => {
  db = await createTestDatabase()
  const gen = testTraffic({ seed: 11, dids: 10, agoSeconds: 60 })
  events = gen.generate(3000)
  server = await startJetstreamServer()
})
afterAll(async () => {
  await server?.close()
  await db?.close()
})

const startIndexer = () =>
  startWireIndexer(db, 'v1', server.url, { verifyHandle: async (_did, claimed) => claimed })

const lastTime = (upTo: number) => events[upTo - 1].time_us

describe('Jetstream ingestion end to end', () => {
  it('survives disconnects and a restart with no gap and no double counting', async () => {
    // No stored cursor: the indexer starts at the live tip, so it connects first.
    let indexer = startIndexer()
    await waitFor('the connection', async () => server.connections > 0)
    server.append(events.slice(0, 1000) as unknown as JetstreamJson[])
    await waitFor(
      'first third',
      async () => (await getCursor(db, 'jetstream', indexer.source.key)) === lastTime(1000),
    )
    // The upstream drops everyone mid-stream while more arrives.
    server.append(events.slice(1000, 1500) as unknown as JetstreamJson[])
    server.dropConnections()
    server.append(events.slice(1500, 2000) as unknown as JetstreamJson[])
    await waitFor(
      'second third',
      async () => (await getCursor(db, 'jetstream', indexer.source.key)) === lastTime(2000),
    )
    const reconnects = await indexer.ctx.metrics.sourceReconnectsTotal.get()
    expect(
      reconnects.values.find((v) => v.labels.source === 'jetstream')?.value,
    ).toBeGreaterThanOrEqual(1)
    await indexer.stop()

    // Restart: it asks for the stored cursor (minus the rewind) and carries on.
    server.append(events.slice(2000) as unknown as JetstreamJson[])
    const requestsBefore = server.requests.length
    indexer = startIndexer()
    await waitFor(
      'the rest',
      async () => (await getCursor(db, 'jetstream', indexer.source.key)) === lastTime(3000),
    )
    await indexer.stop()
    const resumed = server.requests[requestsBefore]
    expect(resumed.cursor).toBe(lastTime(2000) - 1_000_000)

    const model = createReferenceModel({
      promptNsid: NSIDS.prompt,
      conversationNsid: NSIDS.conversation,
      agentNsid: NSIDS.agent,
    })
    for (const e of events) model.apply(e)
    const want = model
      .visibleState()
      .prompts.map(
        (p) => `${p.did}/${p.rkey} ${p.cid} ${[...p.flags].sort().join(',')} ${p.recompiles}`,
      )
      .sort()
    const rows = await db.rows<{ k: string; cid: string; flags: number; recompiles: number }>(
      sql`SELECT did || '/' || rkey AS k, cid, flags, recompiles FROM prompts WHERE NOT deleted AND NOT hidden`,
    )
    const { flagsToNames } = await import('../../src/model/flags.ts')
    const got = rows
      .map(
        (r) => `${r.k} ${r.cid} ${flagsToNames(Number(r.flags)).sort().join(',')} ${r.recompiles}`,
      )
      .sort()
    expect(got).toEqual(want)
  }, 120_000)
})
