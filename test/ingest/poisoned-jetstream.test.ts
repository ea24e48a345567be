import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { JetstreamEvent } from '../../demo-network/generator.ts'
import {
  type JetstreamJson,
  type JetstreamServer,
  startJetstreamServer,
} from '../../demo-network/jetstream-server.ts'
import { type Runtime, startIngest } from '../../src/cli/runtime.ts'
import type { Database } from '../../src/db/client.ts'
import { getStats } from '../../src/db/read/stats.ts'
import { createJetstreamSource } from '../../src/ingest/jetstream/v1.ts'
import { createTestDatabase } from '../helpers/db.ts'
import { NSIDS } from '../helpers/events.ts'
import {
  expectSameEndState,
  refusals,
  stateDigest,
  storedCursor,
  testRuntime,
} from '../helpers/restart-kit.ts'
import { testTraffic } from '../helpers/traffic.ts'

// Jetstream v1 with the frame: `{"did":"not-a-did","time_us":9007199254740991}`
// used to become the cursor; after a restart the indexer asked Jetstream for events after
// 2255 and received nothing more. Now a restart resumes after the last event read.

const FAR = Number.MAX_SAFE_INTEGER
let events: JetstreamEvent[]
let frames: JetstreamJson[]
const dbs: Database[] = []
const servers: JetstreamServer[] = []

beforeAll(() => {
  const gen = testTraffic({ seed: 12, dids: 6, agoSeconds: 600 })
  events = gen.generate(250)
  const json = events as unknown as JetstreamJson[]
  // The first event from the 100th on that Jetstream sends (of a wanted collection).
  const at = events.findIndex(
    (e, i) => i >= 100 && e.kind === 'commit' && e.commit.collection.startsWith('xyz.quasigod.'),
  )
  frames = [
    ...json.slice(0, at),
    { ...json[at], did: 'not-a-did', time_us: FAR } as JetstreamJson,
    // A valid event an hour ahead: applied, refused for the cursor and the lag.
    { ...json[at], time_us: Date.now() * 1000 + 3_600_000_000 } as JetstreamJson,
    ...json.slice(at + 1),
  ]
})
afterAll(async () => {
  for (const s of servers) await s.close()
  for (const db of dbs) await db.close()
})

async function setup() {
  const db = await createTestDatabase()
  dbs.push(db)
  const server = await startJetstreamServer()
  servers.push(server)
  return { db, server }
}

async function ingestUntil(
  rt: Runtime,
  server: JetstreamServer,
  timeUs: number,
  feed?: () => void,
) {
  const source = createJetstreamSource({
    url: server.url,
    wantedCollections: ['xyz.quasigod.lab.letta.*'],
    collections: Object.values(NSIDS),
    rewindSeconds: 1,
    logger: rt.ctx.logger,
    metrics: rt.ctx.metrics,
    verifyHandle: async (_did, claimed) => claimed,
    backoffBaseMs: 20,
  })
  // Subscribe requests, not open sockets: the previous run's socket may close after this
  // one opens, and both are counted before the start, which may already connect.
  const subscribedBefore = server.requests.length
  const handle = await startIngest(rt, source)
  const deadline = Date.now() + 60_000
  while (server.requests.length === subscribedBefore && Date.now() < deadline) await tick()
  feed?.()
  let reached: number | null = null
  while (Date.now() < deadline) {
    reached = (await storedCursor(rt.ctx.db, 'jetstream', server.url))?.cursor ?? null
    if (reached === timeUs) break
    await tick()
  }
  await handle.stop()
  expect(reached).toBe(timeUs)
  return handle
}

const lastSent = (list: JetstreamEvent[]) =>
  list.findLast((e) => e.kind !== 'commit' || e.commit.collection.startsWith('xyz.quasigod.'))!
    .time_us

const tick = () => new Promise((r) => setTimeout(r, 50))

describe('a poisoned Jetstream frame', () => {
  it('never becomes the cursor: the restart resumes after the last event read', async () => {
    const cut = 150
    // frames has one more line than events; Jetstream sends only the wanted collections.
    const lastInPrefix = lastSent(events.slice(0, cut - 1))
    const b = await setup()
    const rt1 = testRuntime(b.db)
    const first = await ingestUntil(rt1, b.server, lastInPrefix, () =>
      b.server.append(frames.slice(0, cut)),
    )
    expect(await refusals(rt1.ctx.metrics, 'jetstream', 'future_time')).toBe(1)
    expect(first.pipeline.newestEventUs).toBe(lastInPrefix)

    // Jetstream goes on while the indexer is down; the restart asks for the stored cursor.
    b.server.append(frames.slice(cut))
    const requests = b.server.requests.length
    const last = lastSent(events)
    await ingestUntil(testRuntime(b.db), b.server, last)
    expect(b.server.requests[requests].cursor).toBe(lastInPrefix - 1_000_000)
    const stats = await getStats(b.db, { source: 'jetstream', key: b.server.url })
    expect(stats.ingest.lastEventAt).toBe(new Date(Math.floor(last / 1000)).toISOString())
    expect(stats.ingest.lagSeconds).toBeGreaterThan(500)

    const a = await setup()
    await ingestUntil(testRuntime(a.db, { BATCH_SIZE: '1' }), a.server, last, () =>
      a.server.append(frames),
    )
    expectSameEndState(await stateDigest(b.db), await stateDigest(a.db))
  }, 240_000)
})
