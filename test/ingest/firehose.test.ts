import { Secp256k1Keypair } from '@atproto/crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createDidResolver, type DidResolver } from '../../src/ingest/did-resolver.ts'
import {
  createFirehoseSource,
  type FirehoseSourceOptions,
} from '../../src/ingest/firehose/source.ts'
import { createHandleVerifier } from '../../src/ingest/identity.ts'
import { seqCursor } from '../../src/model/cursor.ts'
import type { CommitEvent, IndexEvent, SourceItem } from '../../src/model/events.ts'
import type { HandleVerifier } from '../../src/model/handles.ts'
import { type ExpectedCommit, writeScenario } from '../helpers/firehose-scenario.ts'
import {
  AGENT,
  COLLECTIONS,
  CONVERSATION,
  collectingSink,
  counterValue,
  PROMPT,
  silentLogger,
  testMetrics,
} from '../helpers/ingest-kit.ts'
import { agentRecord } from '../helpers/letta-records.ts'
import { startNetwork, type TestAccount, type TestNetwork } from '../helpers/network.ts'
import { startCuttingProxy } from '../helpers/ws-proxy.ts'

let net: TestNetwork
let resolver: DidResolver
let verifyHandle: HandleVerifier
let alice: TestAccount
let bob: TestAccount
let lastSeq: number
let baseline: SourceItem[]
let baselineMetrics: ReturnType<typeof testMetrics>
let expected: ExpectedCommit[]

/** A firehose source on the test network's PDS, with `metrics` (fresh ones by default). */
function firehoseSource(
  metrics: ReturnType<typeof testMetrics>,
  over: Partial<FirehoseSourceOptions> = {},
) {
  return createFirehoseSource({
    url: net.pdsUrl,
    collections: COLLECTIONS,
    resolver,
    verifyHandle,
    logger: silentLogger(),
    metrics,
    allowPrivateNetwork: true,
    ...over,
  })
}

async function runUntilSeq(
  over: Partial<FirehoseSourceOptions> = {},
  start: number | null = 0,
  delayMs = 0,
) {
  const metrics = over.metrics ?? testMetrics()
  const source = firehoseSource(metrics, over)
  const sink = collectingSink(delayMs)
  const ac = new AbortController()
  const run = source.run(sink, start === null ? null : seqCursor(start), ac.signal)
  await sink.until((items) => items.at(-1)?.cursor?.value === lastSeq, 20_000)
  ac.abort()
  await run
  return { items: sink.items, metrics }
}

const commits = (items: SourceItem[]) =>
  items.map((i) => i.event).filter((e): e is CommitEvent => e?.kind === 'commit')
const ofKind = <K extends IndexEvent['kind']>(items: SourceItem[], kind: K, did: string) =>
  items
    .map((i) => i.event)
    .filter((e): e is Extract<IndexEvent, { kind: K }> => e?.kind === kind && e.did === did)

beforeAll(async () => {
  net = await startNetwork()
  resolver = createDidResolver({ plcUrl: net.plcUrl, webFetch: fetch })
  verifyHandle = createHandleVerifier({ resolver, resolveHandle: net.resolveHandle })
  ;({ alice, bob, expected } = await writeScenario(net))
  lastSeq = await net.currentSeq()
  ;({ items: baseline, metrics: baselineMetrics } = await runUntilSeq())
})

afterAll(async () => {
  await net?.close()
})

describe('firehose source against the reference PDS', () => {
  it('turns matching ops into commit events, in order, with cids, revs and lex-JSON records', () => {
    const got = commits(baseline)
    expect(got.map(({ timeUs: _t, record: _r, ...rest }) => rest)).toEqual(
      expected.map(({ record: _r, ...rest }) => rest),
    )
    const conv = got[1]
    expect(conv.record).toEqual(expected[1].record)
    expect(got[2].record).toMatchObject({ $type: PROMPT, coreMemory: 'v1' })
    expect(got[3].record).toMatchObject({ coreMemory: 'v2' })
    expect(got.find((e) => e.op === 'delete')?.record).toBeNull()
    for (const e of got) expect(e.timeUs).toBeGreaterThan(Date.parse('2025-01-01') * 1000)
  })

  it('advances the cursor across frames with nothing to index, never backwards', () => {
    const cursors = baseline.map((i) => i.cursor!.value)
    expect(cursors).toEqual([...cursors].sort((a, b) => a - b))
    expect(cursors.at(-1)).toBe(lastSeq)
    // Every seq the PDS produced is covered: the noise posts and the empty first commits too.
    const covered = new Set(cursors)
    for (let seq = 1; seq <= lastSeq; seq++) expect(covered.has(seq)).toBe(true)
    expect(baseline.filter((i) => i.event === null).length).toBeGreaterThanOrEqual(4)
    // The applyWrites frame yields two events: only the last completes its seq.
    const batchItems = baseline.filter(
      (i) => i.event?.kind === 'commit' && i.event.rev === expected[3].rev,
    )
    expect(batchItems).toHaveLength(2)
    expect(batchItems[0].cursor).toEqual(seqCursor(batchItems[1].cursor!.value - 1))
  })

  it('reports account status changes and verified handles', () => {
    const accounts = ofKind(baseline, 'account', bob.did)
    expect(accounts.map((a) => [a.active, a.status])).toEqual([
      [true, null],
      [false, 'deactivated'],
      [true, null],
      [false, 'takendown'],
    ])
    for (const a of accounts) expect(a.seq).toBeGreaterThan(0)
    const identities = ofKind(baseline, 'identity', alice.did)
    expect(identities.length).toBeGreaterThanOrEqual(2)
    // Verification happens when the frame is processed, so both see the current handle.
    expect(identities.at(-1)?.handle).toBe('alice2.test')
  })

  it('answers #sync with a verified snapshot of the repo', async () => {
    const snaps = ofKind(baseline, 'snapshot', alice.did)
    expect(snaps.length).toBeGreaterThanOrEqual(1)
    const last = snaps.at(-1)!
    expect(last.rev).toMatch(/^[a-z2-7]{13}$/)
    const live = last.records.map((r) => `${r.collection}/${r.rkey}`).sort()
    const want = [expected[0], expected[1], expected[2]]
      .map((e) => `${e.collection}/${e.rkey}`)
      .sort()
    expect(live).toEqual(want)
    // bob's creation and reactivation sequenced a #sync each, but bob is taken down by the
    // time they are read: the re-fetch fails, is counted, and the cursor moves past.
    expect(ofKind(baseline, 'snapshot', bob.did)).toHaveLength(0)
    const errors = { source: 'firehose', collection: 'unknown', op: 'unknown', outcome: 'error' }
    expect(await counterValue(baselineMetrics, errors)).toBe(2)
  })

  it('counts a commit that fails verification as an error and skips it', async () => {
    const wrongKey = (await Secp256k1Keypair.create()).did()
    const lying: DidResolver = {
      ...resolver,
      resolveKey: async (did, o) => (did === alice.did ? wrongKey : resolver.resolveKey(did, o)),
    }
    const { items, metrics } = await runUntilSeq({ resolver: lying })
    const got = commits(items)
    expect(got.every((e) => e.did === bob.did)).toBe(true)
    expect(got).toHaveLength(1)
    expect(items.at(-1)?.cursor).toEqual(seqCursor(lastSeq))
    const errors = (collection: string, op: string) =>
      counterValue(metrics, { source: 'firehose', collection, op, outcome: 'error' })
    expect(await errors(PROMPT, 'create')).toBe(1)
    expect(await errors(PROMPT, 'update')).toBe(1)
    expect(await errors(CONVERSATION, 'create')).toBe(2)
    expect(await errors(CONVERSATION, 'delete')).toBe(1)
    expect(await errors(AGENT, 'create')).toBe(1)
  })

  it('accepts the same commits unverified in unauthenticated mode', async () => {
    const wrongKey = (await Secp256k1Keypair.create()).did()
    const lying: DidResolver = { ...resolver, resolveKey: async () => wrongKey }
    const { items } = await runUntilSeq({ resolver: lying, unauthenticated: true })
    expect(commits(items).map((e) => e.cid)).toEqual(expected.map((e) => e.cid))
  })

  it('keeps order and loses nothing behind a slow sink with a tiny in-flight window', async () => {
    const { items } = await runUntilSeq({ maxInFlight: 2 }, 0, 3)
    expect(items.map((i) => [i.cursor, i.event?.kind ?? null])).toEqual(
      baseline.map((i) => [i.cursor, i.event?.kind ?? null]),
    )
  })

  it('reconnects with backoff after a dropped connection and resumes from its cursor', async () => {
    const proxy = await startCuttingProxy(net.pdsWsUrl, 5)
    try {
      const metrics = testMetrics()
      const { items } = await runUntilSeq({
        url: proxy.url,
        metrics,
        reconnectMinMs: 10,
        reconnectMaxMs: 50,
      })
      expect(items.map((i) => [i.cursor, i.event?.kind ?? null])).toEqual(
        baseline.map((i) => [i.cursor, i.event?.kind ?? null]),
      )
      expect(
        await counterValue(metrics, { source: 'firehose' }, 'sourceReconnectsTotal'),
      ).toBeGreaterThanOrEqual(1)
      expect(proxy.cursors[0]).toBe('0')
      // Each reconnect asks for what follows the last item handed on: no gap, no replay.
      expect(proxy.cursors[1]).toBe(String(items[4].cursor?.value))
    } finally {
      await proxy.close()
    }
  })

  it('restarts at the live tip when its cursor is ahead of the upstream (FutureCursor)', async () => {
    const metrics = testMetrics()
    const source = firehoseSource(metrics, { reconnectMinMs: 10 })
    const sink = collectingSink()
    const ac = new AbortController()
    const run = source.run(sink, seqCursor(1_000_000_000), ac.signal)
    try {
      // Whether the restarted connection is up yet is not observable from outside: write
      // until a write shows up.
      for (let i = 0; i < 100 && !sink.items.some((x) => x.event?.kind === 'commit'); i++) {
        await alice.agent.com.atproto.repo.createRecord({
          repo: alice.did,
          collection: AGENT,
          record: agentRecord(`t${i}`),
        })
        await new Promise((r) => setTimeout(r, 50))
      }
      expect(sink.items.some((x) => x.event?.kind === 'commit' && x.event.did === alice.did)).toBe(
        true,
      )
      expect(await counterValue(metrics, { source: 'firehose' }, 'resumeGapsTotal')).toBe(1)
    } finally {
      ac.abort()
      await run
    }
    lastSeq = await net.currentSeq()
  })
})

describe('handle verifier', () => {
  it('needs the handle to resolve back to the DID', async () => {
    const other = createHandleVerifier({ resolver, resolveHandle: async () => bob.did })
    expect(await other(alice.did, 'alice2.test')).toBeNull()
    expect(await verifyHandle(alice.did, 'alice2.test')).toBe('alice2.test')
    expect(await verifyHandle('did:plc:aaaaaaaaaaaaaaaaaaaaaaaa', 'x.test')).toBeNull()
  })
})
