import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Secp256k1Keypair } from '@atproto/crypto'
import { blocksToCarFile, MemoryBlockstore, Repo, WriteOpAction } from '@atproto/repo'
import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { WebSocketServer } from 'ws'
import type { Runtime } from '../../src/cli/runtime.ts'
import { indexSnapshot, startIngest } from '../../src/cli/runtime.ts'
import { createShutdown } from '../../src/cli/shutdown.ts'
import { collectionsOf, loadConfig } from '../../src/config/config.ts'
import { createContext } from '../../src/context/context.ts'
import type { Database } from '../../src/db/client.ts'
import { loadChainHead } from '../../src/db/repo-chain.ts'
import { runBackfill } from '../../src/ingest/backfill/backfill.ts'
import { UpstreamLimiter } from '../../src/ingest/backfill/upstream-limiter.ts'
import { createDidResolver } from '../../src/ingest/did-resolver.ts'
import { createFirehoseSource } from '../../src/ingest/firehose/source.ts'
import { createMetrics } from '../../src/observe/metrics.ts'
import { createTestDatabase } from '../helpers/db.ts'
import { fixedResolver } from '../helpers/firehose/big-repo.ts'
import { LettaRepos } from '../helpers/firehose/frames.ts'
import { startPlcStub } from '../helpers/firehose/plc-stub.ts'
import { AGENT, COLLECTIONS, captureLogger, counterValue, PROMPT } from '../helpers/ingest-kit.ts'
import { agentRecord, promptRecord } from '../helpers/letta-records.ts'
import { storedCursor } from '../helpers/restart-kit.ts'

// DAG-CBOR carries integers up to 2^64; @atproto/repo decodes one beyond 2^53 as a bigint,
// which no JSON (and so no stored record) can hold. A signed record carrying one, on the
// verified firehose (with and without Sync 1.1 chain state) and in a getRepo CAR, is
// counted and skipped with its reason; the rest of its frame, batch and repo is indexed, and
// the repo's chain head follows the commit.

const DID = 'did:plc:bigintaaaaaaaaaaaaaaaaaa'
const HUGE = 2n ** 63n + 1n
const AGENT_URI = `at://${DID}/${AGENT}/a1`
const prompt = (rkey: string, extra: Record<string, unknown> = {}) => ({
  ...promptRecord({ did: DID, rkey, agent: AGENT_URI, content: `prompt ${rkey}` }),
  ...extra,
})
/** The writes, in order: the poisoned prompt and agent between good ones. */
const WRITES: Array<{ collection: string; rkey: string; record: Record<string, unknown> }> = [
  { collection: AGENT, rkey: 'a1', record: agentRecord('good') },
  { collection: PROMPT, rkey: 'p1', record: prompt('p1', { tokens: HUGE }) },
  { collection: PROMPT, rkey: 'p2', record: prompt('p2') },
  { collection: AGENT, rkey: 'a2', record: { ...agentRecord('bad'), usage: { n: [1, -HUGE] } } },
  { collection: PROMPT, rkey: 'p3', record: prompt('p3') },
]

const OLD_REV = '2222222222222'
const CID_P1 = 'bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm'

const closers: Array<() => Promise<unknown>> = []
afterAll(async () => {
  for (const c of closers.reverse()) await c()
})

function testRuntime(db: Database) {
  const { logger, logs } = captureLogger()
  const config = loadConfig({}, { BATCH_DELAY_MS: '0' })
  const metrics = createMetrics({ version: 'test', collections: collectionsOf(config) })
  const ctx = createContext({ config, logger, db, metrics })
  const shutdown = createShutdown(logger)
  const rt: Runtime = { ctx, isReady: () => true, shutdown, close: () => shutdown.close() }
  return { rt, logs }
}

async function newDb(): Promise<Database> {
  const db = await createTestDatabase()
  closers.push(() => db.close())
  return db
}

async function stored(db: Database): Promise<string[]> {
  const rows = await db.rows<{ k: string }>(sql`
    SELECT 'prompt/' || rkey AS k FROM prompts WHERE did = ${DID} AND NOT deleted
    UNION ALL SELECT 'agent/' || rkey FROM agents WHERE did = ${DID} AND NOT deleted`)
  return rows.map((r) => r.k).sort()
}

async function errors(rt: Runtime, source: string, collection: string): Promise<number> {
  return counterValue(rt.ctx.metrics, { source, collection, outcome: 'error' })
}

/** The skip's log line: it names the record and says why. */
function expectSkipLogged(logs: Array<Record<string, unknown>>, path: string) {
  const line = logs.find((l) => JSON.stringify(l).includes(path) && l.level === 40)
  expect(line, `a warning naming ${path}`).toBeDefined()
  expect(JSON.stringify(line)).toMatch(/beyond ±2\^53: JSON cannot hold it/)
}

describe('a firehose record with an integer beyond 2^53', () => {
  let url: string
  let plcUrl: string
  let lastSeq: number

  beforeAll(async () => {
    const repos = new LettaRepos()
    const frames: Uint8Array[] = []
    const baseMs = Date.now() - 60_000
    for (const w of WRITES) {
      const seq = frames.length + 1
      const ev = {
        did: DID,
        time_us: (baseMs + seq) * 1000,
        kind: 'commit' as const,
        commit: { rev: '', operation: 'create' as const, ...w },
      }
      const made = await repos.frame(ev, seq, new Date(baseMs + seq).toISOString())
      frames.push(made!.frame)
    }
    lastSeq = frames.length
    const plc = await startPlcStub(repos.keys, { handles: false })
    closers.push(plc.close)
    plcUrl = plc.url
    const http = createServer((_req, res) => res.writeHead(404).end())
    const wss = new WebSocketServer({ server: http })
    wss.on('connection', (ws, req) => {
      const cursor = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('cursor') || 0)
      for (let i = Math.max(0, cursor); i < frames.length; i++) ws.send(frames[i])
    })
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', () => r()))
    closers.push(async () => {
      for (const c of wss.clients) c.terminate()
      http.closeAllConnections()
      await new Promise((r) => http.close(r))
    })
    url = `ws://127.0.0.1:${(http.address() as AddressInfo).port}`
  })

  for (const chained of [false, true]) {
    it(`is counted and skipped, the rest indexed (${chained ? 'Sync 1.1 chain' : 'no chain state'})`, async () => {
      const db = await newDb()
      const { rt, logs } = testRuntime(db)
      const source = createFirehoseSource({
        url,
        collections: COLLECTIONS,
        resolver: createDidResolver({ plcUrl }),
        verifyHandle: async () => null,
        logger: rt.ctx.logger,
        metrics: rt.ctx.metrics,
        allowPrivateNetwork: true,
        reconnectMinMs: 50,
        chain: chained
          ? { loadHead: (did) => loadChainHead(db, did), tracked: [], unsynchronized: [] }
          : undefined,
      })
      const handle = await startIngest(rt, source)
      const deadline = Date.now() + 15_000
      let reached: number | null = null
      while (Date.now() < deadline) {
        reached = (await storedCursor(db, 'firehose', url))?.cursor ?? null
        if (reached === lastSeq) break
        await new Promise((r) => setTimeout(r, 50))
      }
      await handle.stop()
      expect(reached).toBe(lastSeq)
      expect(await stored(db)).toEqual(['agent/a1', 'prompt/p2', 'prompt/p3'])
      expect(await errors(rt, 'firehose', PROMPT)).toBe(1)
      expect(await errors(rt, 'firehose', AGENT)).toBe(1)
      expectSkipLogged(logs, `${PROMPT}/p1`)
      expectSkipLogged(logs, `${AGENT}/a2`)
      if (chained) {
        // The chain follows every commit, the poisoned ones too: the next commit is no break.
        const head = await loadChainHead(db, DID)
        expect(head).toMatchObject({ state: 'synchronized' })
        expect(await counterValue(rt.ctx.metrics, {}, 'resumeGapsTotal')).toBe(0)
        const { values } = await rt.ctx.metrics.chainBreaksTotal.get()
        expect(values.reduce((a, v) => a + v.value, 0)).toBe(0)
      }
    }, 30_000)
  }
})

describe('a repo CAR with a record holding an integer beyond 2^53', () => {
  it('is counted and skipped, the rest of the repo indexed', async () => {
    const kp = await Secp256k1Keypair.create()
    const storage = new MemoryBlockstore()
    const writes = WRITES.map((w) => ({
      action: WriteOpAction.Create as const,
      collection: w.collection as `${string}.${string}.${string}`,
      rkey: w.rkey,
      // The bigint is no LexValue: @atproto/repo encodes it all the same.
      record: w.record as never,
    }))
    const repo = await Repo.create(storage, DID, kp, writes)
    const car = await blocksToCarFile(repo.cid, storage.blocks)
    const server: Server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/vnd.ipld.car' })
      res.end(Buffer.from(car))
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
    closers.push(() => new Promise((r) => server.close(r)))
    const pds = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

    const db = await newDb()
    const { rt, logs } = testRuntime(db)
    // An older p1 that JSON can hold is kept: a record skipped is not a record deleted.
    const p1 = { collection: PROMPT, rkey: 'p1', cid: CID_P1, record: prompt('p1') }
    await indexSnapshot(rt, { kind: 'snapshot', did: DID, rev: OLD_REV, records: [p1], timeUs: 1 })
    const summary = await runBackfill({
      logger: rt.ctx.logger,
      metrics: rt.ctx.metrics,
      resolver: fixedResolver(pds, kp.did()),
      collections: COLLECTIONS,
      dids: [DID],
      concurrency: 1,
      isDone: () => false,
      markDone: () => {},
      emit: (s) => indexSnapshot(rt, s),
      signal: new AbortController().signal,
      progress: false,
      allowPrivateNetwork: true,
      attempts: 1,
      limiter: new UpstreamLimiter(),
    })
    expect(summary).toMatchObject({ done: 1, failed: 0 })
    expect(await stored(db)).toEqual(['agent/a1', 'prompt/p1', 'prompt/p2', 'prompt/p3'])
    const [kept] = await db.rows<{ cid: string }>(
      sql`SELECT cid FROM prompts WHERE did = ${DID} AND rkey = 'p1'`,
    )
    expect(kept.cid).toBe(CID_P1)
    expect(await errors(rt, 'backfill', PROMPT)).toBe(1)
    expect(await errors(rt, 'backfill', AGENT)).toBe(1)
    expectSkipLogged(logs, `${PROMPT}/p1`)
    expectSkipLogged(logs, `${AGENT}/a2`)
  }, 30_000)
})
