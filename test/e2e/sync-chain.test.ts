import { cborEncode } from '@atproto/common'
import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Database } from '../../src/db/client.ts'
import { getCursor } from '../../src/db/read/stats.ts'
import { getRepoView } from '../../src/db/repo-chain.ts'
import { flagsToNames } from '../../src/model/flags.ts'
import { waitFor } from '../helpers/cli.ts'
import { createTestDatabase } from '../helpers/db.ts'
import { NSIDS } from '../helpers/events.ts'
import { getPrompt } from '../helpers/get-prompt.ts'
import { CONVERSATION, PROMPT } from '../helpers/ingest-kit.ts'
import { startNetwork, type TestAccount, type TestNetwork } from '../helpers/network.ts'
import {
  chainOf,
  pdsRecords,
  promptFlags,
  putSidecarPrompt,
  type Rig,
  settled,
  startIngest,
  storedRecords,
  writeNoise,
  writeSidecar,
} from '../helpers/sync-rig.ts'
import { type DecodedFrame, startTamperProxy, type TamperProxy } from '../helpers/tamper-proxy.ts'

// Sync 1.1 against the reference PDS behind a relay that misbehaves (tamper-proxy.ts): each
// case ends with what we store equal to the PDS's listRecords, flags right, and the repo
// synchronized again. Each case has its own account (resyncs are rate-limited per repo).

let net: TestNetwork
let db: Database
let proxy: TamperProxy
let rig: Rig

const commitOf =
  (did: string, pred: (ops: Array<{ action: string; path: string }>) => boolean) =>
  (f: DecodedFrame) =>
    f.header.t === '#commit' &&
    f.body.repo === did &&
    pred(f.body.ops as Array<{ action: string; path: string }>)

const counter = async (
  name: 'chainBreaksTotal' | 'resyncsTotal',
  labels: Record<string, string>,
) => {
  const got = await rig.ctx.metrics[name].get()
  const v = got.values.find((x) =>
    Object.entries(labels).every(([k, val]) => (x.labels as Record<string, unknown>)[k] === val),
  )
  return v?.value ?? 0
}

beforeAll(async () => {
  net = await startNetwork()
  db = await createTestDatabase()
  proxy = await startTamperProxy(net.pdsWsUrl)
  rig = await startIngest(db, net, proxy.url)
}, 60_000)
afterAll(async () => {
  await rig?.stop()
  await proxy?.close()
  await db?.close()
  await net?.close()
})

async function freshRepo(name: string) {
  const acc = await net.createAccount(name)
  const { rkey, agentUri } = await writeSidecar(acc)
  await settled(db, acc)
  expect(flagsToNames(await promptFlags(db, acc.did, rkey))).toEqual([])
  return { acc, rkey, agentUri }
}

const didOf = (acc: TestAccount) => acc.did as `did:${string}:${string}`

describe('Sync 1.1 on the verified firehose, behind a misbehaving relay', () => {
  it('a dropped commit (a conversation delete) is found by the next commit and healed by a resync', async () => {
    const { acc, rkey } = await freshRepo('dropper')
    const breaks = await counter('chainBreaksTotal', { reason: 'since' })
    const dropped = proxy.once(
      commitOf(acc.did, (ops) => ops.some((o) => o.action === 'delete')),
      'drop',
    )
    await acc.agent.com.atproto.repo.deleteRecord({ repo: acc.did, collection: CONVERSATION, rkey })
    await dropped
    // Nothing told us yet: the next commit (another collection) does not continue the chain.
    await writeNoise(acc)
    await settled(db, acc)
    expect(await counter('chainBreaksTotal', { reason: 'since' })).toBe(breaks + 1)
    expect((await storedRecords(db, acc.did)).some((r) => r.collection === CONVERSATION)).toBe(
      false,
    )
    expect(flagsToNames(await promptFlags(db, acc.did, rkey))).toEqual(['orphaned'])
    expect(await counter('resyncsTotal', { outcome: 'ok' })).toBeGreaterThanOrEqual(1)
  }, 90_000)

  it('an altered prevData is a break: its ops are not applied as they came, the resync brings them', async () => {
    const { acc, rkey, agentUri } = await freshRepo('altered')
    const breaks = await counter('chainBreaksTotal', { reason: 'prev_data' })
    const altered = proxy.once(
      commitOf(acc.did, (ops) => ops.some((o) => o.path.startsWith(PROMPT))),
      {
        // Any other root will do: the commit's own CID.
        rewrite: (body) => {
          body.prevData = body.commit
        },
      },
    )
    await putSidecarPrompt(acc, { rkey, agentUri, content: 'recompiled' })
    await altered
    await settled(db, acc)
    expect(await counter('chainBreaksTotal', { reason: 'prev_data' })).toBe(breaks + 1)
    expect(await storedRecords(db, acc.did)).toEqual(await pdsRecords(acc))
    expect(flagsToNames(await promptFlags(db, acc.did, rkey))).toEqual([])
  }, 90_000)

  it('an old commit replayed later is dropped and changes nothing', async () => {
    const { acc, rkey } = await freshRepo('replayed')
    const old = proxy.seen.find(
      commitOf(acc.did, (ops) => ops.some((o) => o.path.startsWith(CONVERSATION))),
    )
    expect(old).toBeDefined()
    await acc.agent.com.atproto.repo.deleteRecord({ repo: acc.did, collection: CONVERSATION, rkey })
    await settled(db, acc)
    const resyncs = await counter('resyncsTotal', { outcome: 'ok' })
    // The create of the conversation, sent again: it must not bring it back.
    proxy.inject(old!.raw)
    await writeNoise(acc)
    await settled(db, acc)
    expect(flagsToNames(await promptFlags(db, acc.did, rkey))).toEqual(['orphaned'])
    expect(await counter('resyncsTotal', { outcome: 'ok' })).toBe(resyncs)
  }, 90_000)

  it('a commit sent twice is applied once', async () => {
    const { acc, rkey, agentUri } = await freshRepo('doubled')
    const twice = proxy.once(
      commitOf(acc.did, (ops) => ops.some((o) => o.path.startsWith(PROMPT))),
      'twice',
    )
    await putSidecarPrompt(acc, { rkey, agentUri, content: 'v2' })
    await twice
    await writeNoise(acc)
    await settled(db, acc)
    const rows = await db.rows<{ recompiles: number }>(
      sql`SELECT recompiles FROM prompts WHERE did = ${acc.did} AND rkey = ${rkey}`,
    )
    expect(Number(rows[0].recompiles)).toBe(1)
    expect((await chainOf(db, acc.did))?.sync_state).toBe('synchronized')
  }, 90_000)

  it('a verified #sync after a dropped commit heals the repo; the same #sync again does nothing', async () => {
    const { acc, rkey } = await freshRepo('synced')
    const dropped = proxy.once(
      commitOf(acc.did, (ops) => ops.some((o) => o.action === 'delete')),
      'drop',
    )
    await acc.agent.com.atproto.repo.deleteRecord({ repo: acc.did, collection: CONVERSATION, rkey })
    await dropped
    const syncBreaks = await counter('chainBreaksTotal', { reason: 'sync_event' })
    const syncFrame = proxy.once((f) => f.header.t === '#sync' && f.body.did === acc.did, 'twice')
    const resyncs = await counter('resyncsTotal', { outcome: 'ok' })
    // What the PDS's rebuild-repo and rotate-keys scripts do: announce the current commit.
    const ctx = net.pds.ctx
    const data = await ctx.actorStore.read(didOf(acc), (store) => store.repo.getSyncEventData())
    await ctx.sequencer.sequenceSync(didOf(acc), data)
    const frame = await syncFrame
    await settled(db, acc)
    // Sent twice: the first resyncs, the second arrives while the resync is on its way.
    expect(await counter('chainBreaksTotal', { reason: 'sync_event' })).toBe(syncBreaks + 1)
    expect(await counter('resyncsTotal', { outcome: 'ok' })).toBe(resyncs + 1)
    expect(flagsToNames(await promptFlags(db, acc.did, rkey))).toEqual(['orphaned'])
    // Later, after a newer commit, that #sync is old: nothing happens.
    await writeNoise(acc)
    await settled(db, acc)
    proxy.inject(frame.raw)
    await writeNoise(acc)
    await settled(db, acc)
    expect(await counter('chainBreaksTotal', { reason: 'sync_event' })).toBe(syncBreaks + 1)
    expect(await counter('resyncsTotal', { outcome: 'ok' })).toBe(resyncs + 1)
  }, 90_000)

  it('a #sync whose CAR is not a signed commit of that repo is counted and ignored', async () => {
    const { acc } = await freshRepo('forged')
    const other = await net.createAccount('forger')
    const before = (await rig.ctx.metrics.unverifiableSyncsTotal.get()).values[0]?.value ?? 0
    // Another repo's genuine #sync, relabelled as this repo's: the commit's DID gives it away.
    const forged = proxy.once((f) => f.header.t === '#sync' && f.body.did === other.did, {
      rewrite: (body) => {
        body.did = acc.did
      },
    })
    const ctx = net.pds.ctx
    const data = await ctx.actorStore.read(didOf(other), (store) => store.repo.getSyncEventData())
    await ctx.sequencer.sequenceSync(didOf(other), data)
    await forged
    await writeNoise(acc)
    await settled(db, acc)
    const after = (await rig.ctx.metrics.unverifiableSyncsTotal.get()).values[0]?.value ?? 0
    expect(after).toBe(before + 1)
  }, 90_000)

  it("records carry their provenance: verified firehose commits, then a resync's fetch", async () => {
    const { acc, rkey } = await freshRepo('provenance')
    const live = await getPrompt(db, NSIDS, acc.did, rkey)
    const latest = await acc.agent.com.atproto.sync.getLatestCommit({ did: acc.did })
    expect(live?.provenance).toEqual({
      source: 'firehose',
      verified: true,
      commit: latest.data.cid,
      rev: latest.data.rev,
    })
    // A dropped prompt update: the resync brings it, and says so.
    const dropped = proxy.once(
      commitOf(acc.did, (ops) => ops.some((o) => o.path.startsWith(PROMPT))),
      'drop',
    )
    const agentUri = live!.agent.uri!
    await putSidecarPrompt(acc, { rkey, agentUri, content: 'v3' })
    await dropped
    await writeNoise(acc)
    await settled(db, acc)
    const healed = await getPrompt(db, NSIDS, acc.did, rkey)
    expect(healed?.provenance).toMatchObject({ source: 'backfill', verified: true })
    expect(healed?.recompiles).toBe(1)
  }, 90_000)

  it('the chain state survives a restart: the first commit after it is checked against the stored state', async () => {
    const { acc, rkey } = await freshRepo('restarted')
    await rig.stop()
    // While we are down the conversation goes; on the way back the relay loses that commit.
    await acc.agent.com.atproto.repo.deleteRecord({ repo: acc.did, collection: CONVERSATION, rkey })
    const dropped = proxy.once(
      commitOf(acc.did, (ops) => ops.some((o) => o.action === 'delete')),
      'drop',
    )
    // A new process: new metrics, an empty tracker; only the database remembers.
    rig = await startIngest(db, net, proxy.url, await getCursor(db, 'firehose', proxy.url))
    await dropped
    await writeNoise(acc)
    await settled(db, acc)
    expect(await counter('chainBreaksTotal', { reason: 'since' })).toBe(1)
    expect(flagsToNames(await promptFlags(db, acc.did, rkey))).toEqual(['orphaned'])
  }, 90_000)

  // Last: its crafted frames carry seqs ahead of the PDS's.
  it('#account throttled and desynchronized (which @atproto/sync drops) hide the repo; active shows it', async () => {
    const { acc, rkey } = await freshRepo('throttled')
    const seq = (await net.currentSeq()) + 1000
    const account = (n: number, active: boolean, status?: string) =>
      Buffer.concat([
        cborEncode({ op: 1, t: '#account' }),
        cborEncode({
          seq: seq + n,
          did: acc.did,
          time: new Date().toISOString(),
          active,
          ...(status ? { status } : {}),
        }),
      ])
    for (const [n, status] of [
      [0, 'throttled'],
      [2, 'desynchronized'],
    ] as const) {
      proxy.inject(account(n, false, status))
      await waitFor(
        `${status} to hide the repo`,
        async () => (await getPrompt(db, NSIDS, acc.did, rkey)) === null,
      )
      const repo = await getRepoView(db, acc.did)
      expect(repo?.account).toEqual({ active: false, status, hidden: true })
      proxy.inject(account(n + 1, true))
      await waitFor(
        'active to show it again',
        async () => (await getPrompt(db, NSIDS, acc.did, rkey)) !== null,
      )
    }
  }, 90_000)
})
