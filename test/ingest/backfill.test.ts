import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { TID } from '@atproto/common'
import { Secp256k1Keypair } from '@atproto/crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type BackfillOptions, httpBase, runBackfill } from '../../src/ingest/backfill/backfill.ts'
import { createProgressRecorder, renderBar } from '../../src/ingest/backfill/progress.ts'
import { createDidResolver, type DidResolver } from '../../src/ingest/did-resolver.ts'
import type { RepoSnapshotEvent } from '../../src/model/events.ts'
import {
  AGENT,
  COLLECTIONS,
  CONVERSATION,
  captureLogger,
  counterValue,
  PROMPT,
  silentLogger,
  testMetrics,
} from '../helpers/ingest-kit.ts'
import { agentRecord, conversationRecord, promptRecord } from '../helpers/letta-records.ts'
import { startNetwork, type TestAccount, type TestNetwork } from '../helpers/network.ts'

let net: TestNetwork
let resolver: DidResolver
let alice: TestAccount
let bob: TestAccount
let carol: TestAccount

function backfill(over: Partial<BackfillOptions> = {}) {
  const done = new Map<string, string>()
  const snapshots: RepoSnapshotEvent[] = []
  const metrics = testMetrics()
  const summary = runBackfill({
    logger: silentLogger(),
    metrics,
    resolver,
    collections: COLLECTIONS,
    relayUrl: net.pdsUrl,
    concurrency: 4,
    isDone: (did) => done.has(did),
    markDone: (did, rev) => {
      done.set(did, rev)
    },
    emit: async (s) => {
      snapshots.push(s)
    },
    signal: new AbortController().signal,
    progress: false,
    allowPrivateNetwork: true,
    retryDelayMs: 10,
    ...over,
  })
  return { summary, done, snapshots, metrics }
}

/** What the PDS itself says is live in `did`'s three collections. */
async function liveRecords(account: TestAccount) {
  const out: Array<{ collection: string; rkey: string; cid: string; record: unknown }> = []
  for (const collection of COLLECTIONS) {
    // Raw JSON from the PDS, not the client's decoded values: the wire form is lex-JSON.
    const url = `${net.pdsUrl}/xrpc/com.atproto.repo.listRecords?repo=${account.did}&collection=${collection}&limit=100`
    const body = (await (await fetch(url)).json()) as {
      records: Array<{ uri: string; cid: string; value: unknown }>
    }
    for (const r of body.records) {
      out.push({ collection, rkey: r.uri.split('/').pop()!, cid: r.cid, record: r.value })
    }
  }
  return sortRecords(out)
}

const sortRecords = <T extends { collection: string; rkey: string }>(rs: T[]) =>
  [...rs].sort((a, b) => `${a.collection}/${a.rkey}`.localeCompare(`${b.collection}/${b.rkey}`))

const latestRev = async (did: string) => {
  const res = await fetch(`${net.pdsUrl}/xrpc/com.atproto.sync.getLatestCommit?did=${did}`)
  return ((await res.json()) as { rev: string }).rev
}

beforeAll(async () => {
  net = await startNetwork()
  resolver = createDidResolver({ plcUrl: net.plcUrl, webFetch: fetch })
  alice = await net.createAccount('alice')
  bob = await net.createAccount('bob')
  carol = await net.createAccount('carol')
  const repo = alice.did
  const api = alice.agent.com.atproto.repo
  const post = { $type: 'app.bsky.feed.post', text: 'noise', createdAt: new Date().toISOString() }
  const ag = await api.createRecord({
    repo,
    collection: AGENT,
    record: agentRecord('You are {{x}}'),
  })
  for (let i = 0; i < 3; i++) {
    const rkey = TID.nextStr()
    await api.createRecord({
      repo,
      collection: CONVERSATION,
      rkey,
      record: { ...conversationRecord(ag.data.uri), ref: { $link: ag.data.cid } },
    })
    await api.putRecord({
      repo,
      collection: PROMPT,
      rkey,
      record: promptRecord({ did: repo, rkey, agent: ag.data.uri, content: `v${i}` }),
    })
    await api.createRecord({ repo, collection: 'app.bsky.feed.post', record: post })
    if (i === 1) {
      // Recompiled in place, then its conversation deleted: only the newest prompt stays.
      await api.putRecord({
        repo,
        collection: PROMPT,
        rkey,
        record: promptRecord({ did: repo, rkey, agent: ag.data.uri, content: 'v1b' }),
      })
      await api.deleteRecord({ repo, collection: CONVERSATION, rkey })
    }
  }
  await bob.agent.com.atproto.repo.createRecord({
    repo: bob.did,
    collection: 'app.bsky.feed.post',
    record: post,
  })
  await carol.agent.com.atproto.repo.createRecord({
    repo: carol.did,
    collection: AGENT,
    record: agentRecord('c'),
  })
  await net.deactivate(carol.did)
})

afterAll(async () => {
  await net?.close()
})

describe('backfill against the reference PDS', () => {
  it('lists the PDS with listRepos and snapshots exactly the live records at the repo rev', async () => {
    const progress: number[] = []
    const run = backfill({ onProgress: (p) => progress.push(p.done) })
    const summary = await run.summary
    // carol is deactivated: listRepos marks her inactive and her repo cannot be fetched.
    expect(summary).toMatchObject({ repos: 2, done: 2, skipped: 0, failed: 0 })
    const a = run.snapshots.find((s) => s.did === alice.did)!
    const b = run.snapshots.find((s) => s.did === bob.did)!
    expect(a.kind).toBe('snapshot')
    expect(a.rev).toBe(await latestRev(alice.did))
    expect(sortRecords(a.records)).toEqual(await liveRecords(alice))
    expect(a.records.filter((r) => r.collection === PROMPT)).toHaveLength(3)
    expect(a.records.filter((r) => r.collection === CONVERSATION)).toHaveLength(2)
    expect(a.records.find((r) => r.collection === CONVERSATION)?.record).toMatchObject({
      ref: { $link: expect.any(String) },
    })
    // A repo without the collections still gets a snapshot: it clears anything stale.
    expect(b.records).toEqual([])
    expect(summary.records).toBe(a.records.length)
    expect(run.done.get(alice.did)).toBe(a.rev)
    expect(progress.at(-1)).toBe(2)
  })

  it('resumes: repos already done are skipped', async () => {
    const first = backfill()
    await first.summary
    const again = await runBackfill({
      logger: silentLogger(),
      metrics: testMetrics(),
      resolver,
      collections: COLLECTIONS,
      relayUrl: net.pdsUrl,
      concurrency: 2,
      isDone: (did) => first.done.has(did),
      markDone: () => {},
      emit: async () => {
        throw new Error('nothing should be emitted')
      },
      signal: new AbortController().signal,
      progress: false,
      allowPrivateNetwork: true,
    })
    expect(again).toMatchObject({ repos: 2, done: 0, skipped: 2, failed: 0 })
  })

  it('takes an explicit DID list, and counts and reports repos that fail', async () => {
    const missing = 'did:plc:aaaaaaaaaaaaaaaaaaaaaaaa'
    const run = backfill({ dids: [alice.did, missing, carol.did, alice.did] })
    const summary = await run.summary
    expect(summary).toMatchObject({ repos: 3, done: 1, failed: 2 })
    expect(summary.failures.map((f) => f.did).sort()).toEqual([carol.did, missing].sort())
    expect(summary.failures.find((f) => f.did === carol.did)?.reason).toMatch(/RepoDeactivated/)
    expect(
      await counterValue(run.metrics, {
        source: 'backfill',
        collection: 'unknown',
        op: 'unknown',
        outcome: 'error',
      }),
    ).toBe(2)
  })

  it('records its progress at the start and finished at the end; a failed write is logged, not fatal', async () => {
    const writes: Array<{ done: number; listingDone: boolean; finished: boolean }> = []
    const ok = await backfill({
      recordProgress: async (p, finished) => {
        writes.push({ done: p.done, listingDone: p.listingDone, finished })
      },
    }).summary
    expect(writes[0]).toEqual({ done: 0, listingDone: false, finished: false })
    expect(writes.at(-1)).toEqual({ done: ok.done, listingDone: true, finished: true })
    expect(writes.filter((w) => w.finished)).toHaveLength(1)

    const { logger, logs } = captureLogger()
    const failing = await backfill({
      logger,
      recordProgress: async () => {
        throw new Error('store down')
      },
    }).summary
    expect(failing).toMatchObject({ done: ok.done, failed: 0 })
    const warned = logs.filter((l) => String(l.msg).includes('progress'))
    expect(warned.length).toBeGreaterThanOrEqual(2)
    expect(warned.at(-1)).toMatchObject({ failures: warned.length - 1 })
  })

  it('refuses a repo whose commit is not signed by the DID key', async () => {
    const wrongKey = (await Secp256k1Keypair.create()).did()
    const lying: DidResolver = { ...resolver, resolveKey: async () => wrongKey }
    const summary = await backfill({ resolver: lying, dids: [alice.did] }).summary
    expect(summary).toMatchObject({ done: 0, failed: 1 })
    expect(summary.failures[0].reason).toMatch(/signature/)
  })

  it('refuses loopback PDS endpoints unless allowed (DID documents are untrusted)', async () => {
    const summary = await backfill({ dids: [alice.did], allowPrivateNetwork: false }).summary
    expect(summary.failures[0].reason).toMatch(/refusing PDS endpoint/)
  })

  it('uses listReposByCollection on a relay, page by page, once per DID', async () => {
    const relay = await startFakeRelay({
      [PROMPT]: [alice.did],
      [CONVERSATION]: [alice.did, bob.did],
      [AGENT]: [alice.did],
    })
    try {
      const run = backfill({ relayUrl: relay.url.replace('http:', 'ws:') })
      const summary = await run.summary
      expect(summary).toMatchObject({ repos: 2, done: 2, failed: 0 })
      expect(relay.calls.filter((c) => c.includes('listRepos?'))).toEqual([])
      expect(relay.calls.some((c) => c.includes('cursor='))).toBe(true)
    } finally {
      await new Promise((r) => relay.server.close(r))
    }
  })

  it('records progress at most once per interval, and never while a write is in flight', async () => {
    const p = {
      listed: 1,
      listingDone: false,
      done: 0,
      skipped: 0,
      failed: 0,
      records: 0,
      elapsedMs: 0,
    }
    const writes: Array<[number, boolean]> = []
    let release = () => {}
    const recorder = createProgressRecorder({
      logger: silentLogger(),
      intervalMs: 50,
      write: async (q, finished) => {
        writes.push([q.done, finished])
        if (writes.length === 2) await new Promise<void>((r) => (release = r))
      },
    })
    for (let i = 0; i < 100; i++) recorder.update({ ...p, done: i })
    await new Promise((r) => setTimeout(r, 60))
    expect(writes).toEqual([[0, false]])
    recorder.update({ ...p, done: 100 })
    await new Promise((r) => setTimeout(r, 60))
    recorder.update({ ...p, done: 101 }) // the write before it still runs
    const finished = recorder.finish({ ...p, done: 102 })
    release()
    await finished
    expect(writes).toEqual([
      [0, false],
      [100, false],
      [102, true],
    ])
  })

  it('draws a progress bar', () => {
    const p = {
      listed: 10,
      listingDone: true,
      done: 4,
      skipped: 1,
      failed: 0,
      records: 12,
      elapsedMs: 2000,
    }
    const bar = renderBar(p, 120)
    expect(bar).toContain('50%')
    expect(bar).toContain('5/10 repos')
    expect(bar).toContain('ETA')
    expect(renderBar({ ...p, listingDone: false }, 120)).toContain('5/10+ repos')
    expect(httpBase('wss://relay.example/xrpc/com.atproto.sync.subscribeRepos')).toBe(
      'https://relay.example',
    )
  })
})

/** A relay's listing endpoint, one DID per page so pagination is exercised. */
async function startFakeRelay(byCollection: Record<string, string[]>) {
  const calls: string[] = []
  const server: Server = createServer((req, res) => {
    calls.push(req.url ?? '')
    const url = new URL(req.url ?? '/', 'http://x')
    res.setHeader('content-type', 'application/json')
    if (url.pathname !== '/xrpc/com.atproto.sync.listReposByCollection') {
      res.statusCode = 501
      res.end(JSON.stringify({ error: 'MethodNotImplemented' }))
      return
    }
    const dids = byCollection[url.searchParams.get('collection') ?? ''] ?? []
    const at = Number(url.searchParams.get('cursor') ?? 0)
    const page = dids.slice(at, at + 1).map((did) => ({ did }))
    res.end(
      JSON.stringify({ repos: page, cursor: at + 1 < dids.length ? String(at + 1) : undefined }),
    )
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  return { server, calls, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }
}
