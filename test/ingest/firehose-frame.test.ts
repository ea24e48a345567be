import { cborEncode } from '@atproto/common'
import { type Keypair, Secp256k1Keypair } from '@atproto/crypto'
import { blocksToCarFile, cidForRecord, MemoryBlockstore, Repo, WriteOpAction } from '@atproto/repo'
import { CID } from 'multiformats/cid'
import { describe, expect, it } from 'vitest'
import type { DidResolver } from '../../src/ingest/did-resolver.ts'
import type { ChainFrames } from '../../src/ingest/firehose/chain/chain-frames.ts'
import { createFrameProcessor } from '../../src/ingest/firehose/frame.ts'
import { seqCursor } from '../../src/model/cursor.ts'
import {
  COLLECTIONS,
  counterValue,
  PROMPT,
  silentLogger,
  testMetrics,
} from '../helpers/ingest-kit.ts'

// Frame-level behaviour that needs no network; commits against a real PDS are covered in
// firehose.test.ts.

const DID = 'did:plc:aaaaaaaaaaaaaaaaaaaaaaaa'
const TIME = '2026-01-01T00:00:00.000Z'
const TIME_US = Date.parse(TIME) * 1000
const CID_A = CID.parse('bafyreifp3j6zvzq5nzg3qg6e2juazrury2xlpmyuasy7zym5xgbmoqwo5a')

const frame = (header: object, body: object) =>
  Buffer.concat([cborEncode(header), cborEncode(body)])
const noResolver = {
  resolve: async () => null,
  resolveKey: async () => {
    throw new Error('no keys here')
  },
  resolvePds: async () => {
    throw new Error('no PDS here')
  },
} satisfies DidResolver

function make(handle: string | null = null, isKnownDid?: (did: string) => boolean) {
  const metrics = testMetrics()
  const process = createFrameProcessor({
    isKnownDid,
    collections: COLLECTIONS,
    resolver: noResolver,
    verifyHandle: async () => handle,
    logger: silentLogger(),
    metrics,
    fetchSnapshot: async () => {
      throw new Error('RepoTakendown')
    },
  })
  const errors = (collection = 'unknown', op = 'unknown') =>
    counterValue(metrics, { source: 'firehose', collection, op, outcome: 'error' })
  return { process, errors }
}

const commitBody = (ops: object[]) => ({
  seq: 7,
  rebase: false,
  tooBig: false,
  repo: DID,
  commit: CID_A,
  rev: '3m6sm7ncxdj2b',
  since: null,
  blocks: new Uint8Array(),
  ops,
  blobs: [],
  time: TIME,
})

describe('frame processor', () => {
  it('counts an undecodable frame as an error and yields nothing', async () => {
    const { process, errors } = make()
    const res = await process(new Uint8Array([0xff, 0x00, 0x13]))
    expect(res.items).toEqual([])
    expect(await errors()).toBe(1)
  })

  it('surfaces error frames and info frames', async () => {
    const { process } = make()
    const err = await process(frame({ op: -1 }, { error: 'FutureCursor', message: 'x' }))
    expect(err.error).toEqual({ error: 'FutureCursor', message: 'x' })
    const info = await process(frame({ op: 1, t: '#info' }, { name: 'OutdatedCursor' }))
    expect(info.info?.name).toBe('OutdatedCursor')
  })

  it('moves the cursor past an unknown message type', async () => {
    const { process } = make()
    const res = await process(frame({ op: 1, t: '#future' }, { seq: 42, time: TIME }))
    expect(res.items).toEqual([{ event: null, cursor: seqCursor(42), timeUs: TIME_US }])
  })

  it('moves the cursor past a commit of other collections without verifying it', async () => {
    const { process, errors } = make()
    const ops = [{ action: 'create', path: 'app.bsky.feed.post/3m6sm7ncql52b', cid: CID_A }]
    const res = await process(frame({ op: 1, t: '#commit' }, commitBody(ops)))
    expect(res.items).toEqual([{ event: null, cursor: seqCursor(7), timeUs: TIME_US }])
    expect(await errors()).toBe(0)
  })

  it('counts a matching commit it cannot verify, per op, and moves on', async () => {
    const { process, errors } = make()
    const ops = [
      { action: 'create', path: `${PROMPT}/3m6sm7ncql52b`, cid: CID_A },
      { action: 'delete', path: `${PROMPT}/3m6sm7ncql52c`, cid: null },
    ]
    const res = await process(frame({ op: 1, t: '#commit' }, commitBody(ops)))
    expect(res.items).toEqual([{ event: null, cursor: seqCursor(7), timeUs: TIME_US }])
    expect(await errors(PROMPT, 'create')).toBe(1)
    expect(await errors(PROMPT, 'delete')).toBe(1)
  })

  it('passes every account status through, including ones newer than @atproto/sync knows', async () => {
    const { process } = make()
    const body = { seq: 9, did: DID, time: TIME, active: false, status: 'desynchronized' }
    const res = await process(frame({ op: 1, t: '#account' }, body))
    expect(res.items[0].event).toEqual({
      kind: 'account',
      did: DID,
      active: false,
      status: 'desynchronized',
      seq: 9,
      timeUs: TIME_US,
    })
  })

  it('carries the verified handle of an identity event, or null', async () => {
    const body = { seq: 10, did: DID, time: TIME, handle: 'claimed.test' }
    const verified = await make('real.test').process(frame({ op: 1, t: '#identity' }, body))
    expect(verified.items[0].event).toMatchObject({
      kind: 'identity',
      handle: 'real.test',
      seq: 10,
    })
    const unverified = await make(null).process(frame({ op: 1, t: '#identity' }, body))
    expect(unverified.items[0].event).toMatchObject({ kind: 'identity', handle: null })
  })

  it('counts a #sync whose repo cannot be fetched, and moves on', async () => {
    const { process, errors } = make()
    const body = { seq: 11, did: DID, time: TIME, rev: '3m6sm7ncxdj2b', blocks: new Uint8Array() }
    const res = await process(frame({ op: 1, t: '#sync' }, body))
    expect(res.items).toEqual([{ event: null, cursor: seqCursor(11), timeUs: TIME_US }])
    expect(await errors()).toBe(1)
  })

  it('counts a malformed account message as an account error', async () => {
    const { process, errors } = make()
    const res = await process(frame({ op: 1, t: '#account' }, { seq: 12, did: DID, time: TIME }))
    expect(res.items).toEqual([{ event: null, cursor: seqCursor(12), timeUs: TIME_US }])
    expect(await errors('unknown', 'account')).toBe(1)
  })

  it('spends no lookups on #sync and #identity of DIDs that do not matter here', async () => {
    const { process, errors } = make('real.test', () => false)
    const sync = { seq: 13, did: DID, time: TIME, rev: '3m6sm7ncxdj2b', blocks: new Uint8Array() }
    const identity = { seq: 14, did: DID, time: TIME, handle: 'x.test' }
    expect((await process(frame({ op: 1, t: '#sync' }, sync))).items[0].event).toBeNull()
    expect((await process(frame({ op: 1, t: '#identity' }, identity))).items[0].event).toBeNull()
    expect(await errors()).toBe(0)
  })
})

describe('frame processor on signed commits', () => {
  const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n
  // The other ECDSA signature for the same message, (r, n - s): valid maths, but atproto
  // forbids it, so a commit signed this way must not verify.
  const highS = (kp: Keypair): Keypair => ({
    jwtAlg: kp.jwtAlg,
    did: () => kp.did(),
    sign: async (msg) => {
      const sig = await kp.sign(msg)
      const s = BigInt(`0x${Buffer.from(sig.subarray(32)).toString('hex')}`)
      const twin = Buffer.from((N - s).toString(16).padStart(64, '0'), 'hex')
      return new Uint8Array(Buffer.concat([sig.subarray(0, 32), twin]))
    },
  })

  async function signedCommit(signer: Keypair, claims: { rev?: string; commit?: CID } = {}) {
    const repo = await Repo.create(new MemoryBlockstore(), DID, signer)
    const record = { $type: PROMPT, content: 'hi', compiledAt: TIME }
    const write = { action: WriteOpAction.Create, collection: PROMPT, rkey: 'a', record } as const
    const commit = await repo.formatCommit(write, signer)
    const blocks = await blocksToCarFile(commit.cid, commit.relevantBlocks)
    const ops = [{ action: 'create', path: `${PROMPT}/a`, cid: await cidForRecord(record) }]
    const body = { ...commitBody(ops), commit: commit.cid, rev: commit.rev, blocks, ...claims }
    return frame({ op: 1, t: '#commit' }, body)
  }

  function processorFor(kp: Keypair) {
    const metrics = testMetrics()
    const process = createFrameProcessor({
      collections: COLLECTIONS,
      resolver: { ...noResolver, resolveKey: async () => kp.did() },
      verifyHandle: async () => null,
      logger: silentLogger(),
      metrics,
      fetchSnapshot: async () => {
        throw new Error('RepoTakendown')
      },
    })
    const errors = () =>
      counterValue(metrics, {
        source: 'firehose',
        collection: PROMPT,
        op: 'create',
        outcome: 'error',
      })
    return { process, errors }
  }

  it('indexes a correctly signed commit and skips its high-S twin', async () => {
    const kp = await Secp256k1Keypair.create()
    const { process, errors } = processorFor(kp)
    const ok = await process(await signedCommit(kp))
    expect(ok.items.map((i) => i.event?.kind)).toEqual(['commit'])
    expect(await errors()).toBe(0)
    const twin = await process(await signedCommit(highS(kp)))
    expect(twin.items).toEqual([{ event: null, cursor: seqCursor(7), timeUs: TIME_US }])
    expect(await errors()).toBe(1)
  })

  it('skips a signed commit whose frame claims another rev or commit', async () => {
    const kp = await Secp256k1Keypair.create()
    const { process, errors } = processorFor(kp)
    const rev = await process(await signedCommit(kp, { rev: '3m6sm7ncxdj2z' }))
    expect(rev.items).toEqual([{ event: null, cursor: seqCursor(7), timeUs: TIME_US }])
    const commit = await process(await signedCommit(kp, { commit: CID_A }))
    expect(commit.items).toEqual([{ event: null, cursor: seqCursor(7), timeUs: TIME_US }])
    expect(await errors()).toBe(2)
  })
})

// Which frames reach the Sync 1.1 chain checks: every #commit and #sync of a tracked repo,
// wanted ops or not; a repo becomes tracked on its first wanted commit; the rest of the
// network only moves the cursor. (The checks themselves: chain-check.test.ts, e2e/sync-chain.)

const TRACKED = 'did:plc:trackedaaaaaaaaaaaaaaaaa'
const OTHER = 'did:plc:otheraaaaaaaaaaaaaaaaaaa'
const commit = (repo: string, seq: number, path: string) =>
  frame(
    { op: 1, t: '#commit' },
    {
      seq,
      rebase: false,
      tooBig: false,
      repo,
      commit: CID_A,
      rev: '3m6sm7ncxdj2b',
      since: null,
      blocks: new Uint8Array(),
      ops: [{ action: 'create', path, cid: CID_A }],
      blobs: [],
      time: TIME,
    },
  )

function rig() {
  const tracked = new Set([TRACKED])
  const judged: string[] = []
  const frames: ChainFrames = {
    commit: async (body, timeUs) => {
      judged.push(`commit ${body.repo} ${body.seq}`)
      return [{ event: null, cursor: seqCursor(body.seq), timeUs }]
    },
    sync: async (body, timeUs) => {
      judged.push(`sync ${body.did} ${body.seq}`)
      return [{ event: null, cursor: seqCursor(body.seq), timeUs }]
    },
  }
  const process = createFrameProcessor({
    collections: COLLECTIONS,
    resolver: noResolver,
    verifyHandle: async () => null,
    logger: silentLogger(),
    metrics: testMetrics(),
    fetchSnapshot: async () => {
      throw new Error('not here')
    },
    chain: { frames, isTracked: (d) => tracked.has(d), track: (d) => void tracked.add(d) },
  })
  return { process, judged, tracked }
}

describe('frames routed to the chain checks', () => {
  it('checks a tracked repo commit without wanted ops; skips an untracked one', async () => {
    const r = rig()
    await r.process(commit(TRACKED, 1, 'app.bsky.feed.post/a'))
    const skipped = await r.process(commit(OTHER, 2, 'app.bsky.feed.post/b'))
    expect(skipped.items).toEqual([{ event: null, cursor: seqCursor(2), timeUs: TIME_US }])
    expect(r.judged).toEqual([`commit ${TRACKED} 1`])
  })

  it('tracks a repo from its first wanted commit, before that commit is checked', async () => {
    const r = rig()
    const first = r.process(commit(OTHER, 3, `${PROMPT}/a`))
    // Synchronously: the frames right behind it, processed meanwhile, must reach the checks.
    expect(r.tracked.has(OTHER)).toBe(true)
    await first
    await r.process(commit(OTHER, 4, 'app.bsky.feed.post/b'))
    expect(r.judged).toEqual([`commit ${OTHER} 3`, `commit ${OTHER} 4`])
  })

  it('a #sync goes to the checks for tracked repos only', async () => {
    const r = rig()
    const sync = (did: string, seq: number) =>
      frame(
        { op: 1, t: '#sync' },
        { seq, did, rev: '3m6sm7ncxdj2b', blocks: new Uint8Array(), time: TIME },
      )
    await r.process(sync(TRACKED, 5))
    const other = await r.process(sync(OTHER, 6))
    expect(other.items.map((i) => i.event)).toEqual([null])
    expect(r.judged).toEqual([`sync ${TRACKED} 5`])
  })
})
