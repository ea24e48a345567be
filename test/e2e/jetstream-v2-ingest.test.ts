import { sql } from 'drizzle-orm'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import {
  type JetstreamV2Server,
  startJetstreamV2Server,
} from '../../demo-network/jetstream-v2-server.ts'
import type { Database } from '../../src/db/client.ts'
import { waitFor } from '../helpers/cli.ts'
import { createTestDatabase, emptyDatabase } from '../helpers/db.ts'
import { account, commit, DID, identity, T0, tid } from '../helpers/jetstream-json.ts'
import { changeRows, recordRows, startIndexer } from '../helpers/jetstream-v2-indexer.ts'

// Jetstream v2 → pipeline → database (PGlite, or Postgres with TEST_DATABASE_URL): the note's
// cases 5, 6, 10 and 11 (notes/jetstream-v2.md), and a v1-then-v2 switch of one instance.

let db: Database
let server: JetstreamV2Server
const stops: Array<() => Promise<void>> = []
// One database for the file, emptied before each test: as good as a fresh one, without
// migrating it again each time.
beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(async () => db?.close())
beforeEach(async () => {
  await emptyDatabase(db)
  server = await startJetstreamV2Server()
})
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s()
  await server.close()
})

function indexer(wire: 'v1' | 'v2' = 'v2', syncQuietSeconds = 10) {
  const url = wire === 'v2' ? server.url : server.v1Url
  const ix = startIndexer(db, wire, url, { zstd: false, syncQuietSeconds })
  stops.push(ix.stop)
  return ix
}

const OTHER = 'did:plc:aaaaaaaaaaaaaaaaaaaaaaaa'
const R = tid(900)
/** A resync create of fixture record `n` at rev R (same CID as the original create). */
const resyncCreate = (n: number) => commit(n, { rev: R })

async function untilCursor(ix: ReturnType<typeof indexer>, seq: number) {
  await waitFor(`cursor ${seq}`, async () => (await ix.cursor()) === seq, 20_000)
}

describe('Jetstream v2 ingestion', () => {
  it('#sync then creates for 2 of 3 records: the 3rd is tombstoned, the 2 equal ones change nothing', async () => {
    const ix = indexer()
    await waitFor('connection', async () => server.connections > 0)
    server.append([commit(1), commit(2), commit(3)])
    await untilCursor(ix, 3)
    const changesBefore = await changeRows(db)
    expect(changesBefore).toHaveLength(3)
    server.appendSync(DID, R, [resyncCreate(1), resyncCreate(2)])
    // While the window is open the stored cursor stays before the #sync (seq 4).
    await waitFor('creates applied', async () =>
      (await recordRows(db)).every((r) => r.rev === R || r.rkey === tid(3)),
    )
    expect(await ix.cursor()).toBe(3)
    // The DID's next event that is not a create at R ends the window.
    server.append([account(10, { active: true, status: null })])
    await untilCursor(ix, 7)
    const rows = await recordRows(db)
    expect(rows.map((r) => [r.rkey, r.rev, r.deleted, r.recompiles])).toEqual([
      [tid(1), R, false, 0],
      [tid(2), R, false, 0],
      [tid(3), R, true, 0],
    ])
    expect((await changeRows(db)).slice(3)).toEqual([{ rkey: tid(3), op: 'delete' }])
    const revisions = await db.rows(sql`SELECT rkey FROM prompt_revisions`)
    expect(revisions).toHaveLength(3)
  })

  it('a #sync window with nothing after it for that repo ends once the stream is 10 s past it', async () => {
    const ix = indexer()
    await waitFor('connection', async () => server.connections > 0)
    server.append([commit(1), commit(2)])
    await untilCursor(ix, 2)
    server.appendSync(DID, R, [resyncCreate(2)], 'OqJlcm9vdHOB')
    const later = (us: number) => ({
      ...identity(0),
      did: OTHER,
      time_us: us,
      identity: { did: OTHER, handle: 'x.test', seq: 1 },
    })
    server.append([later(T0 + 5_000_000)])
    await waitFor('5 s later', async () => ix.pipeline.newestEventUs === T0 + 5_000_000)
    await waitFor('batch', async () => (await recordRows(db))[1].rev === R)
    // 5 s on: still open, nothing deleted yet, the stored cursor held before the #sync.
    expect((await recordRows(db)).map((r) => r.deleted)).toEqual([false, false])
    expect(await ix.cursor()).toBe(2)
    server.append([later(T0 + 30_000_000)])
    await untilCursor(ix, 6)
    expect((await recordRows(db)).map((r) => [r.rkey, r.deleted])).toEqual([
      [tid(1), true],
      [tid(2), false],
    ])
  })

  // The end the first test reaches, where the repo's next event closed the window.
  const REPLACED = [
    [tid(1), R, false, 0],
    [tid(2), R, false, 0],
    [tid(3), R, true, 0],
  ]
  const replaced = async () =>
    (await recordRows(db)).map((r) => [r.rkey, r.rev, r.deleted, r.recompiles])

  it('a #sync whose replacement creates are the last frames of a quiet stream ends by the clock', async () => {
    const ix = indexer('v2', 1)
    await waitFor('connection', async () => server.connections > 0)
    server.append([commit(1), commit(2), commit(3)])
    await untilCursor(ix, 3)
    server.appendSync(DID, R, [resyncCreate(1), resyncCreate(2)])
    // Nothing after them: stream time stands still, so only the wall-clock quiet ends it.
    await untilCursor(ix, 6)
    expect(await replaced()).toEqual(REPLACED)
    expect((await changeRows(db)).slice(3)).toEqual([{ rkey: tid(3), op: 'delete' }])
  })

  it('the same across a restart in the middle of the quiet period', async () => {
    const first = indexer('v2', 30)
    await waitFor('connection', async () => server.connections > 0)
    server.append([commit(1), commit(2), commit(3)])
    await untilCursor(first, 3)
    server.appendSync(DID, R, [resyncCreate(1), resyncCreate(2)])
    await waitFor('creates applied', async () =>
      (await recordRows(db)).every((r) => r.rev === R || r.rkey === tid(3)),
    )
    // Stopped inside the quiet period: the window was open, the cursor held before #sync.
    await first.stop()
    expect((await recordRows(db)).map((r) => r.deleted)).toEqual([false, false, false])
    expect(await first.cursor()).toBe(3)
    const second = indexer('v2', 1)
    await waitFor('resume', async () => server.requests.length === 2)
    expect(server.requests[1].params.get('cursor')).toBe('3')
    await untilCursor(second, 6)
    expect(await replaced()).toEqual(REPLACED)
    expect((await changeRows(db)).slice(3)).toEqual([{ rkey: tid(3), op: 'delete' }])
  })

  it('collections filter: no other collection; an unrelated DID’s #account creates no state', async () => {
    const ix = indexer()
    await waitFor('connection', async () => server.connections > 0)
    const post = commit(1, { collection: 'app.bsky.feed.post' })
    server.append([
      post,
      { ...account(2), did: OTHER, account: { active: false, did: OTHER, seq: 5 } },
      commit(3),
    ])
    await untilCursor(ix, 3)
    expect(server.requests[0].params.getAll('collections')).toEqual(['xyz.quasigod.lab.letta.*'])
    expect(server.counters.sent).toBe(2)
    expect((await db.rows(sql`SELECT did FROM accounts`)).map((r) => r.did)).toEqual([DID])
    expect((await recordRows(db)).map((r) => r.rkey)).toEqual([tid(3)])
  })

  it('a commit delivered twice (a reconnect, and again under a new seq) is applied once', async () => {
    const ix = indexer()
    await waitFor('connection', async () => server.connections > 0)
    server.append([commit(1)])
    await untilCursor(ix, 1)
    server.append([commit(2, { operation: 'update', rkey: tid(1), cid: 'bafyreiupdated' })])
    await untilCursor(ix, 2)
    server.dropConnections()
    await waitFor('reconnect', async () => server.requests.length === 2 && server.connections > 0)
    expect(server.requests[1].params.get('cursor')).toBe('2')
    server.append([commit(2, { operation: 'update', rkey: tid(1), cid: 'bafyreiupdated' })])
    await untilCursor(ix, 3)
    expect(await changeRows(db)).toEqual([
      { rkey: tid(1), op: 'upsert' },
      { rkey: tid(1), op: 'upsert' },
    ])
    expect((await recordRows(db))[0]).toMatchObject({ cid: 'bafyreiupdated', recompiles: 1 })
  })

  it('v1 then v2 on one instance: the v1 wire stores the cursor field, and the two keep separate cursors', async () => {
    const v1 = indexer('v1')
    await waitFor('connection', async () => server.connections > 0)
    server.append([commit(1), commit(2)])
    server.appendSync(DID, R, [resyncCreate(1)])
    server.append([commit(3)])
    // v1 never sees the #sync or the resync create (seqs 3, 4), and stores seqs, not time_us.
    await untilCursor(v1, 5)
    await v1.stop()
    expect((await recordRows(db)).map((r) => [r.rkey, r.deleted])).toEqual([
      [tid(1), false],
      [tid(2), false],
      [tid(3), false],
    ])
    const resumed = indexer('v1')
    await waitFor('v1 resume', async () => server.requests.length === 2)
    expect(server.requests[1].params.get('cursor')).toBe('5')
    await resumed.stop()

    const v2 = startIndexer(db, 'v2', server.url, { zstd: false })
    stops.push(v2.stop)
    await waitFor('v2 connection', async () => server.requests.length === 3)
    expect(server.requests[2].params.has('cursor')).toBe(false)
    server.append([commit(4)])
    await untilCursor(v2, 6)
    const cursors = await db.rows<{ key: string; cursor: string | number }>(
      sql`SELECT key, cursor FROM ingest_cursors ORDER BY key`,
    )
    expect(cursors.map((c) => [c.key, Number(c.cursor)])).toEqual([
      [server.v1Url, 5],
      [server.url, 6],
    ])
  })
})
