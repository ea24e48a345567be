import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Runtime } from '../../src/cli/runtime.ts'
import { startIngest } from '../../src/cli/runtime.ts'
import type { Database } from '../../src/db/client.ts'
import { getStats } from '../../src/db/read/stats.ts'
import { createDidResolver, type DidResolver } from '../../src/ingest/did-resolver.ts'
import { createFirehoseSource } from '../../src/ingest/firehose/source.ts'
import { createHandleVerifier } from '../../src/ingest/identity.ts'
import type { HandleVerifier } from '../../src/model/handles.ts'
import { createTestDatabase } from '../helpers/db.ts'
import { writeScenario } from '../helpers/firehose-scenario.ts'
import {
  type FrameRewrite,
  type HostileRelay,
  startHostileRelay,
} from '../helpers/hostile-relay.ts'
import { AGENT, COLLECTIONS, PROMPT } from '../helpers/ingest-kit.ts'
import { agentRecord, promptRecord } from '../helpers/letta-records.ts'
import { startNetwork, type TestNetwork } from '../helpers/network.ts'
import {
  expectSameEndState,
  refusals,
  stateDigest,
  storedCursor,
  testRuntime,
} from '../helpers/restart-kit.ts'

// The firehose's seq is the relay's, outside the signed commit: a relay can send any. One
// huge seq used to become the stored cursor (a restart then got FutureCursor, went to the
// live tip and lost what came in meanwhile), and one going backwards moved the cursor back.

let net: TestNetwork
let resolver: DidResolver
let verifyHandle: HandleVerifier
let rewrite: FrameRewrite
let firstSeq: number
const relays: HostileRelay[] = []
const dbs: Database[] = []

beforeAll(async () => {
  net = await startNetwork()
  resolver = createDidResolver({ plcUrl: net.plcUrl, webFetch: fetch })
  verifyHandle = createHandleVerifier({ resolver, resolveHandle: net.resolveHandle })
  await writeScenario(net)
  firstSeq = await net.currentSeq()
  rewrite = new Map([
    [3, { seq: Number.MAX_SAFE_INTEGER }],
    [5, { seq: 1 }],
    [6, { time: '2255-06-01T00:00:00.000Z' }],
  ])
}, 120_000)
afterAll(async () => {
  for (const r of relays) await r.close()
  for (const db of dbs) await db.close()
  await net?.close()
})

async function setup(): Promise<{ db: Database; relay: HostileRelay }> {
  const db = await createTestDatabase()
  dbs.push(db)
  const relay = await startHostileRelay(net.pdsWsUrl, rewrite)
  relays.push(relay)
  // From the first seq on, not the live tip: the frames were written before we connect.
  await db.rows(sql`INSERT INTO ingest_cursors (source, key, kind, cursor, updated_at)
    VALUES ('firehose', ${relay.url}, 'seq', 0, now())`)
  return { db, relay }
}

async function ingestUntil(rt: Runtime, url: string, seq: number) {
  const source = createFirehoseSource({
    url,
    collections: COLLECTIONS,
    resolver,
    verifyHandle,
    logger: rt.ctx.logger,
    metrics: rt.ctx.metrics,
    allowPrivateNetwork: true,
    reconnectMinMs: 50,
  })
  const handle = await startIngest(rt, source)
  let reached: number | null = null
  const deadline = Date.now() + 60_000
  while (Date.now() < deadline) {
    reached = (await storedCursor(rt.ctx.db, 'firehose', url))?.cursor ?? null
    if (reached === seq) break
    await new Promise((r) => setTimeout(r, 50))
  }
  await handle.stop()
  expect(reached).toBe(seq)
  return handle
}

async function writeMore(n: number): Promise<void> {
  const alice = await net.createAccount(`late${Date.now() % 100000}`)
  const api = alice.agent.com.atproto.repo
  const ag = await api.createRecord({
    repo: alice.did,
    collection: AGENT,
    record: agentRecord('late'),
  })
  for (let i = 0; i < n; i++) {
    const rkey = `3m6sm7ncql5${'234567ab'[i]}2`
    await api.createRecord({
      repo: alice.did,
      collection: PROMPT,
      rkey,
      record: promptRecord({
        did: alice.did,
        rkey,
        agent: ag.data.uri,
        content: `late ${i}`,
      }),
    })
  }
}

describe('a hostile relay seq', () => {
  it('never becomes the cursor: a restart loses nothing, and the lag ignores a future time', async () => {
    const b = await setup()
    const rt1 = testRuntime(b.db)
    await ingestUntil(rt1, b.relay.url, firstSeq)
    expect(await refusals(rt1.ctx.metrics, 'firehose', 'seq_leap')).toBe(1)
    expect(await refusals(rt1.ctx.metrics, 'firehose', 'seq_backwards')).toBe(1)
    expect(await refusals(rt1.ctx.metrics, 'firehose', 'future_time')).toBe(1)
    const afterFirst = await getStats(b.db, { source: 'firehose', key: b.relay.url })
    expect(afterFirst.ingest.cursor).toBe(firstSeq)
    // The newest frame time, not 2255: the PDS wrote these within the last minutes.
    expect(Date.parse(afterFirst.ingest.lastEventAt!)).toBeLessThanOrEqual(Date.now())
    expect(Date.parse(afterFirst.ingest.lastEventAt!)).toBeGreaterThan(Date.now() - 600_000)

    // More is written while the indexer is down; the restart resumes from the stored seq.
    await writeMore(4)
    const lastSeq = await net.currentSeq()
    const rt2 = testRuntime(b.db)
    await ingestUntil(rt2, b.relay.url, lastSeq)
    expect(b.relay.cursors.at(-1)).toBe(String(firstSeq))

    const a = await setup()
    await ingestUntil(testRuntime(a.db, { BATCH_SIZE: '1' }), a.relay.url, lastSeq)
    expectSameEndState(await stateDigest(b.db), await stateDigest(a.db))
    // The prompts written during the downtime are there (a FutureCursor restart lost them).
    const late = await b.db.rows(
      sql`SELECT 1 FROM prompts WHERE NOT deleted AND record->>'coreMemory' LIKE 'late %'`,
    )
    expect(late.length).toBe(4)
  }, 240_000)
})
