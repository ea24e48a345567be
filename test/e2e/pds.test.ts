import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Database, openDatabase } from '../../src/db/client.ts'
import { readBackfillActivity } from '../../src/db/read/ingest-activity.ts'
import { getCursor } from '../../src/db/read/stats.ts'
import { applyBatch } from '../../src/indexer/apply.ts'
import { countOutcomes } from '../../src/indexer/pipeline.ts'
import { runBackfill } from '../../src/ingest/backfill/backfill.ts'
import { resolverFor } from '../../src/ingest/did-resolver.ts'
import { startCli, startServing, waitFor } from '../helpers/cli.ts'
import { createTestDatabase } from '../helpers/db.ts'
import { indexerDeps, NSIDS, sha256 } from '../helpers/events.ts'
import { getPrompt } from '../helpers/get-prompt.ts'
import { AGENT, CONVERSATION, PROMPT } from '../helpers/ingest-kit.ts'
import { agentRecord, conversationRecord, promptRecord } from '../helpers/letta-records.ts'
import { startNetwork, type TestAccount, type TestNetwork } from '../helpers/network.ts'
import { startIngest } from '../helpers/sync-rig.ts'

// The reference PDS (in-process, SQLite) and PLC (in memory) produce a genuine signed
// firehose and getRepo CARs. Live ingestion of the verified firehose and a backfill of the
// same PDS from scratch must end in the same visible state.

let net: TestNetwork
let live: Database
let alice: TestAccount
let bob: TestAccount
const rkeys: Record<string, string> = {}

const rkeyOf = (uri: string) => uri.split('/').pop()!

beforeAll(async () => {
  net = await startNetwork()
  live = await createTestDatabase()
  alice = await net.createAccount('alice')
  bob = await net.createAccount('bob')
}, 60_000)
afterAll(async () => {
  await live?.close()
  await net?.close()
})

async function writeHistory() {
  const repo = alice.did
  const api = alice.agent.com.atproto.repo
  const ag = await api.createRecord({ repo, collection: AGENT, record: agentRecord('template v1') })
  const agentUri = ag.data.uri
  const prompt = (rkey: string, content: string, over: Record<string, unknown> = {}) => ({
    ...promptRecord({ did: repo, rkey, agent: agentUri, content }),
    rawSystemHash: sha256('template v1'),
    ...over,
  })
  // A sidecar with its conversation, then recompiled with putRecord.
  const c1 = await api.createRecord({
    repo,
    collection: CONVERSATION,
    record: conversationRecord(agentUri),
  })
  rkeys.p1 = rkeyOf(c1.data.uri)
  await api.putRecord({
    repo,
    collection: PROMPT,
    rkey: rkeys.p1,
    record: prompt(rkeys.p1, 'memory one'),
  })
  await api.createRecord({
    repo,
    collection: 'app.bsky.feed.post',
    record: { $type: 'app.bsky.feed.post', text: 'noise', createdAt: new Date().toISOString() },
  })
  await api.putRecord({
    repo,
    collection: PROMPT,
    rkey: rkeys.p1,
    record: prompt(rkeys.p1, 'memory two'),
  })
  // applyWrites: a conversation and its sidecar in one commit, plus a sidecar whose
  // conversation field points elsewhere, and one with no conversation at all.
  rkeys.p2 = '3m6sm7ncql52b'
  rkeys.p3 = '3m6sm7ncql53b'
  rkeys.p4 = '3m6sm7ncql54b'
  await api.applyWrites({
    repo,
    writes: [
      {
        $type: 'com.atproto.repo.applyWrites#create',
        collection: CONVERSATION,
        rkey: rkeys.p2,
        value: conversationRecord(agentUri),
      },
      {
        $type: 'com.atproto.repo.applyWrites#create',
        collection: PROMPT,
        rkey: rkeys.p2,
        value: prompt(rkeys.p2, 'memory x'),
      },
      {
        $type: 'com.atproto.repo.applyWrites#create',
        collection: CONVERSATION,
        rkey: rkeys.p3,
        value: conversationRecord(agentUri),
      },
      {
        $type: 'com.atproto.repo.applyWrites#create',
        collection: PROMPT,
        rkey: rkeys.p3,
        value: prompt(rkeys.p3, 'memory y', {
          conversation: `at://${repo}/${CONVERSATION}/${rkeys.p2}`,
        }),
      },
      {
        $type: 'com.atproto.repo.applyWrites#create',
        collection: PROMPT,
        rkey: rkeys.p4,
        value: prompt(rkeys.p4, 'memory z'),
      },
    ],
  })
  // The agent's template changes: every prompt compiled from v1 is now stale.
  await api.putRecord({
    repo,
    collection: AGENT,
    rkey: rkeyOf(agentUri),
    record: agentRecord('template v2'),
  })
  // A conversation deleted: its sidecar becomes an orphan.
  await api.deleteRecord({ repo, collection: CONVERSATION, rkey: rkeys.p2 })
  // Bob writes a prompt, then is taken down.
  const bobAgent = await bob.agent.com.atproto.repo.createRecord({
    repo: bob.did,
    collection: AGENT,
    record: agentRecord('t'),
  })
  const bc = await bob.agent.com.atproto.repo.createRecord({
    repo: bob.did,
    collection: CONVERSATION,
    record: conversationRecord(bobAgent.data.uri),
  })
  rkeys.bob = rkeyOf(bc.data.uri)
  await bob.agent.com.atproto.repo.putRecord({
    repo: bob.did,
    collection: PROMPT,
    rkey: rkeys.bob,
    record: {
      ...promptRecord({ did: bob.did, rkey: rkeys.bob, agent: bobAgent.data.uri, content: 'b' }),
      rawSystemHash: sha256('t'),
    },
  })
}

/** Visible records of the three collections, canonically ordered. */
async function visible(db: Database) {
  const out: unknown[] = []
  for (const [table, collection] of [
    ['prompts', PROMPT],
    ['conversations', CONVERSATION],
    ['agents', AGENT],
  ]) {
    const flags = table === 'prompts' ? sql`flags` : sql`0 AS flags`
    const rows = await db.rows(
      sql`SELECT did, rkey, cid, record, ${flags} FROM ${sql.raw(table)} WHERE NOT deleted AND NOT hidden ORDER BY did, rkey`,
    )
    for (const r of rows)
      out.push({ collection, ...r, flags: Number((r as { flags: number }).flags) })
  }
  return out
}

describe('against the reference PDS', () => {
  it('live firehose ingestion, then a backfill from scratch, agree', async () => {
    await writeHistory()
    // The production wiring: the firehose source the configuration names, from the start of
    // the PDS's log (a fresh index normally starts at the tip and backfills).
    const rig = await startIngest(live, net, net.pdsUrl, 0)
    const { ctx } = rig
    const resolver = resolverFor(ctx.config)

    const seq = await net.currentSeq()
    await waitFor(
      'the firehose to catch up',
      async () => ((await getCursor(live, 'firehose', rig.key)) ?? 0) >= seq,
    )
    const p1 = await getPrompt(live, NSIDS, alice.did, rkeys.p1)
    expect(p1?.flags).toEqual(['staleTemplate'])
    expect(p1?.recompiles).toBe(1)
    expect((await getPrompt(live, NSIDS, alice.did, rkeys.p2))?.flags).toEqual([
      'orphaned',
      'staleTemplate',
    ])
    expect((await getPrompt(live, NSIDS, alice.did, rkeys.p3))?.flags).toEqual([
      'mismatched',
      'staleTemplate',
    ])
    expect((await getPrompt(live, NSIDS, alice.did, rkeys.p4))?.flags).toEqual([
      'orphaned',
      'staleTemplate',
    ])
    expect((await getPrompt(live, NSIDS, bob.did, rkeys.bob))?.flags).toEqual([])

    await net.takedown(bob.did)
    await waitFor(
      'the takedown to hide bob',
      async () => (await getPrompt(live, NSIDS, bob.did, rkeys.bob)) === null,
    )
    await rig.stop()

    const fresh = await createTestDatabase()
    try {
      const freshDeps = indexerDeps(fresh)
      const summary = await runBackfill({
        logger: ctx.logger,
        metrics: ctx.metrics,
        resolver,
        collections: Object.values(NSIDS),
        relayUrl: net.pdsUrl,
        concurrency: 2,
        isDone: () => false,
        markDone: () => {},
        emit: async (snapshot) =>
          countOutcomes(ctx.metrics, 'backfill', await applyBatch(freshDeps, [snapshot], null)),
        signal: new AbortController().signal,
        progress: false,
        allowPrivateNetwork: true,
        retryDelayMs: 10,
      })
      // Bob's repo is taken down: the PDS no longer serves it, as live ingestion hides it.
      expect(summary.done).toBe(1)
      expect(summary.failures).toEqual([])
      expect(await visible(fresh)).toEqual(await visible(live))
      // alice: one agent, two live conversations, four prompts; bob is hidden.
      expect((await visible(live)).length).toBe(7)
    } finally {
      await fresh.close()
    }
  }, 120_000)
})

describe('prompt-appview backfill (the command)', () => {
  it('indexes the PDS, and a second run resumes with nothing left to do', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pav-backfill-'))
    const env = {
      DATA_DIR: dir,
      DATABASE_URL: '',
      RELAY_URL: net.pdsUrl,
      PLC_URL: net.plcUrl,
      ALLOW_PRIVATE_NETWORK: 'true',
      LOG_LEVEL: 'warn',
    }
    try {
      const first = startCli(['backfill', '--concurrency', '2'], env)
      expect(await first.exited).toBe(0)
      expect(first.output()).toMatch(
        /backfill: \d+ repos listed, 1 done, 0 already done, 0 failed, 7 records/,
      )
      const listed = Number(/backfill: (\d+) repos listed/.exec(first.output())![1])
      const second = startCli(['backfill'], env)
      expect(await second.exited).toBe(0)
      expect(second.output()).toMatch(/0 done, 1 already done, 0 failed/)
      // Each run's progress, as the overview of a process on this database reads it: over.
      const store = await openDatabase({ url: null, dataDir: dir })
      try {
        expect(
          await store.rows(sql`SELECT listed, listing_done AS "listingDone", done, skipped, failed,
            records::int AS records, finished_at IS NOT NULL AS finished
            FROM backfill_runs ORDER BY started_at`),
        ).toEqual([
          { listed, listingDone: true, done: 1, skipped: 0, failed: 0, records: 7, finished: true },
          { listed, listingDone: true, done: 0, skipped: 1, failed: 0, records: 0, finished: true },
        ])
        expect(await readBackfillActivity(store, 15)).toBeNull()
      } finally {
        await store.close()
      }
      // The operator's resync re-fetches one repo through the same path.
      const serve = await startServing(['serve'], { ...env, ADMIN_TOKEN: 'secret' })
      try {
        await waitFor('the server', async () => (await fetch(`${serve.url}/readyz`)).ok)
        const res = await fetch(`${serve.url}/admin/repos/${alice.did}/resync`, {
          method: 'POST',
          headers: { authorization: 'Bearer secret' },
        })
        expect(res.status).toBe(200)
        const denied = await fetch(`${serve.url}/admin/repos/${alice.did}/resync`, {
          method: 'POST',
        })
        expect(denied.status).toBe(401)
      } finally {
        serve.child.kill('SIGTERM')
        await serve.exited
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 120_000)
})
