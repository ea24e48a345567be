import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Secp256k1Keypair } from '@atproto/crypto'
import { blocksToCarFile, MemoryBlockstore, Repo, WriteOpAction } from '@atproto/repo'
import { afterEach, describe, expect, it } from 'vitest'
import { UpstreamError } from '../../src/faults/errors.ts'
import { fetchRepoSnapshot } from '../../src/ingest/backfill/repo-snapshot.ts'
import { Resyncer } from '../../src/ingest/firehose/chain/resyncer.ts'
import type { ChainEvent, RepoSnapshotEvent } from '../../src/model/events.ts'
import { COLLECTIONS, PROMPT, silentLogger, testMetrics } from '../helpers/ingest-kit.ts'

// The resyncer against real HTTP: a PDS that answers getRepo with 429 and retry-after
// before it serves the repo (a CAR signed by @atproto/repo), and its per-repo budget.

const servers: Server[] = []
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r))
})

async function repoCar(did: string) {
  const kp = await Secp256k1Keypair.create()
  const storage = new MemoryBlockstore()
  const record = { $type: PROMPT, content: 'x', compiledAt: '2026-01-01T00:00:00.000Z' }
  const repo = await Repo.create(storage, did, kp, [
    { action: WriteOpAction.Create, collection: PROMPT, rkey: 'r1', record },
  ])
  return { kp, car: await blocksToCarFile(repo.cid, storage.blocks) }
}

/** A PDS that refuses the first `refusals` getRepo calls with 429 + retry-after: 1. */
async function pds(car: Uint8Array, refusals: number) {
  const hits: number[] = []
  const server = createServer((_req, res) => {
    hits.push(Date.now())
    if (hits.length <= refusals) {
      res.writeHead(429, { 'retry-after': '1', 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: 'RateLimitExceeded', message: 'slow down' }))
      return
    }
    res.writeHead(200, { 'content-type': 'application/vnd.ipld.car' })
    res.end(Buffer.from(car))
  })
  servers.push(server)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits }
}

async function rig(repos: Record<string, { url: string; key: string }>, perRepoPerMinute = 5) {
  const metrics = testMetrics()
  const emitted: Array<ChainEvent | RepoSnapshotEvent> = []
  const resolver = {
    resolve: async () => null,
    resolvePds: async (did: string) => repos[did].url,
    resolveKey: async (did: string) => repos[did].key,
  }
  const resyncer = new Resyncer({
    fetchSnapshot: (did, signal) =>
      fetchRepoSnapshot(did, {
        resolver,
        collections: COLLECTIONS,
        signal,
        allowPrivateNetwork: true,
        metrics,
      }),
    hostOf: async (did) => new URL(repos[did].url).host,
    emit: async (ev) => void emitted.push(ev),
    head: async () => null,
    settle: () => {},
    logger: silentLogger(),
    metrics,
    retryBaseMs: 50,
    perRepoPerMinute,
  })
  const count = async (outcome: string) =>
    (await metrics.resyncsTotal.get()).values.find((v) => v.labels.outcome === outcome)?.value ?? 0
  const snapshots = (did: string) =>
    emitted.filter((e): e is RepoSnapshotEvent => e.kind === 'snapshot' && e.did === did)
  return { resyncer, emitted, count, snapshots, metrics }
}

const until = async (pred: () => boolean | Promise<boolean>, ms = 15_000) => {
  const deadline = Date.now() + ms
  while (!(await pred())) {
    if (Date.now() > deadline) throw new Error('timed out')
    await new Promise((r) => setTimeout(r, 20))
  }
}

describe('Resyncer', () => {
  it('waits out a 429 with retry-after, then resyncs; a repo on another PDS is not held up', async () => {
    const slowDid = 'did:plc:slowaaaaaaaaaaaaaaaaaaaa'
    const fastDid = 'did:plc:fastaaaaaaaaaaaaaaaaaaaa'
    const slow = await repoCar(slowDid)
    const fast = await repoCar(fastDid)
    const busy = await pds(slow.car, 2)
    const ok = await pds(fast.car, 0)
    const r = await rig({
      [slowDid]: { url: busy.url, key: slow.kp.did() },
      [fastDid]: { url: ok.url, key: fast.kp.did() },
    })
    r.resyncer.request(slowDid)
    r.resyncer.request(fastDid)
    await until(() => r.snapshots(fastDid).length === 1, 5_000)
    // The other repo finished while the busy PDS still asks us to wait.
    expect(r.snapshots(slowDid)).toEqual([])
    await until(() => r.snapshots(slowDid).length === 1)
    expect(busy.hits.length).toBe(3)
    // Each retry came no sooner than the second the PDS asked for.
    expect(busy.hits[1] - busy.hits[0]).toBeGreaterThanOrEqual(950)
    expect(busy.hits[2] - busy.hits[1]).toBeGreaterThanOrEqual(950)
    // The 429s are waited out inside the fetch (src/ingest/backfill/upstream-limiter.ts): no
    // attempt failed, and each wait is counted as an upstream answer.
    expect(await r.count('failed')).toBe(0)
    expect(await r.count('ok')).toBe(2)
    const upstream = await r.metrics.upstreamRequestsTotal.get()
    const status429 = upstream.values.find((v) => v.labels.status === '429')
    expect(status429?.value).toBe(2)
    const snap = r.snapshots(slowDid)[0]
    expect(snap.records.map((x) => x.rkey)).toEqual(['r1'])
    expect(snap.provenance).toMatchObject({ source: 'backfill', verified: true })
    // The writer first hears the repo is resyncing, then gets its snapshot.
    expect(r.emitted.filter((e) => e.did === slowDid).map((e) => e.kind)).toEqual([
      'chain',
      'snapshot',
    ])
    await r.resyncer.close()
  })

  it('holds a host for the wait an UpstreamError says it asked for, then retries', async () => {
    const did = 'did:plc:waitaaaaaaaaaaaaaaaaaaaa'
    const calls: number[] = []
    const emitted: Array<ChainEvent | RepoSnapshotEvent> = []
    const resyncer = new Resyncer({
      fetchSnapshot: async () => {
        calls.push(performance.now())
        if (calls.length === 1)
          throw new UpstreamError('busy', { retryable: true, retryAfterMs: 1_000 })
        return { kind: 'snapshot', did, rev: '3m6sm7ncql52c', records: [], timeUs: 1 }
      },
      hostOf: async () => 'pds.test',
      emit: async (ev) => void emitted.push(ev),
      head: async () => null,
      settle: () => {},
      logger: silentLogger(),
      metrics: testMetrics(),
      retryBaseMs: 10,
    })
    resyncer.request(did)
    await until(() => emitted.some((e) => e.kind === 'snapshot'))
    // The backoff alone (10 ms here) would have retried at once.
    expect(calls.length).toBe(2)
    expect(calls[1] - calls[0]).toBeGreaterThanOrEqual(950)
    await resyncer.close()
  })

  it('a repo over its budget (2 a minute here) waits for a token and is counted rate_limited', async () => {
    const did = 'did:plc:budgetaaaaaaaaaaaaaaaaaa'
    const { kp, car } = await repoCar(did)
    const host = await pds(car, 0)
    const r = await rig({ [did]: { url: host.url, key: kp.did() } }, 2)
    for (let i = 1; i <= 2; i++) {
      r.resyncer.request(did)
      await until(() => r.snapshots(did).length === i)
    }
    r.resyncer.request(did)
    expect(await r.count('rate_limited')).toBe(1)
    await new Promise((res) => setTimeout(res, 300))
    expect(r.snapshots(did).length).toBe(2)
    expect(r.resyncer.isBusy(did)).toBe(true)
    await r.resyncer.close()
  })

  it('a corrupted or truncated repo CAR fails the resync for good: counted, the repo left desynchronized', async () => {
    for (const [name, damage] of [
      // One byte of the last block flipped: its hash no longer matches its CID.
      [
        'corrupted',
        (car: Uint8Array) => {
          const bad = Buffer.from(car)
          bad[bad.length - 1] ^= 0xff
          return bad
        },
      ],
      ['truncated', (car: Uint8Array) => car.subarray(0, car.length - 7)],
    ] as const) {
      const did = `did:plc:${name}aaaaaaaaaaaaaaaa`.slice(0, 32)
      const { kp, car } = await repoCar(did)
      const host = await pds(damage(car), 0)
      const r = await rig({ [did]: { url: host.url, key: kp.did() } })
      r.resyncer.request(did)
      await until(() => r.emitted.some((e) => e.kind === 'chain' && e.reason === 'resync_failed'))
      expect(r.snapshots(did)).toEqual([])
      expect(await r.count('failed')).toBe(1)
      // Bad data is not retried: one request only.
      expect(host.hits.length).toBe(1)
      await r.resyncer.close()
    }
  })
})
