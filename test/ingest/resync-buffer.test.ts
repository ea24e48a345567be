import { type Keypair, Secp256k1Keypair } from '@atproto/crypto'
import { MemoryBlockstore, type RecordWriteOp, Repo, WriteOpAction } from '@atproto/repo'
import { describe, expect, it } from 'vitest'
import { startFirehoseChain } from '../../src/ingest/firehose/chain/firehose-chain.ts'
import { ResyncBuffer } from '../../src/ingest/firehose/chain/resync-buffer.ts'
import { seqCursor } from '../../src/model/cursor.ts'
import type { ChainEvent, CommitEvent, RepoSnapshotEvent } from '../../src/model/events.ts'
import {
  COLLECTIONS,
  collectingSink,
  PROMPT,
  silentLogger,
  testMetrics,
} from '../helpers/ingest-kit.ts'
import { commitBody } from './commit-body.ts'

// Commits that arrive while their repo resyncs are held and judged again against the
// resynced state: newer ones apply after the snapshot, older ones drop as replays.

const DID = 'did:plc:bufferaaaaaaaaaaaaaaaaaa'
const create = (rkey: string) => ({
  action: WriteOpAction.Create as const,
  collection: PROMPT as `${string}.${string}.${string}`,
  rkey,
  record: { $type: PROMPT, content: rkey, compiledAt: '2026-01-01T00:00:00.000Z' },
})

async function applyCommit(repo: Repo, kp: Keypair, writes: RecordWriteOp[], seq: number) {
  const { body, commit } = await commitBody(repo, kp, writes, seq)
  return { body, next: await repo.applyCommit(commit) }
}

describe('commits held during a resync', () => {
  it('apply after the snapshot when newer than the fetched rev; older ones drop', async () => {
    const kp = await Secp256k1Keypair.create()
    let repo = await Repo.create(new MemoryBlockstore(), DID, kp, [create('a')])
    const head0 = {
      did: DID,
      rev: repo.commit.rev,
      data: repo.commit.data.toString(),
      state: 'synchronized' as const,
    }
    // c1 arrives with an altered prevData: a break. c2 and c3 arrive while the resync runs;
    // the fetch returns the repo as of c2, so c2 is a replay and c3 applies after it.
    const c1 = await applyCommit(repo, kp, [create('b')], 11)
    repo = c1.next
    const c2 = await applyCommit(repo, kp, [create('c')], 12)
    repo = c2.next
    const atC2 = {
      rev: repo.commit.rev,
      cid: repo.cid.toString(),
      data: repo.commit.data.toString(),
    }
    const c3 = await applyCommit(repo, kp, [create('d')], 13)
    repo = c3.next
    c1.body.prevData = c3.body.prevData

    let release!: () => void
    const fetched = new Promise<void>((r) => {
      release = r
    })
    const sink = collectingSink()
    const resolver = {
      resolve: async () => null,
      resolvePds: async () => 'https://pds.example',
      resolveKey: async () => kp.did(),
    }
    const chain = startFirehoseChain({
      state: {
        loadHead: async () => head0,
        tracked: [DID],
        unsynchronized: [],
      },
      sink,
      startCursor: seqCursor(10),
      resolver,
      collections: COLLECTIONS,
      logger: silentLogger(),
      metrics: testMetrics(),
      fetchSnapshot: async (did): Promise<RepoSnapshotEvent> => {
        await fetched
        return {
          kind: 'snapshot',
          did,
          rev: atC2.rev,
          records: [],
          timeUs: Date.now() * 1000,
          commit: { cid: atC2.cid, data: atC2.data },
        }
      },
    })
    const now = Date.now() * 1000
    // What the firehose does: judge, then hand the items on in order.
    const handOn = async (items: Awaited<ReturnType<typeof chain.frames.commit>>) => {
      for (const it of items) {
        await sink.push(it)
        chain.onPushed(it)
      }
    }
    await handOn(await chain.frames.commit(c1.body as never, now))
    await handOn(await chain.frames.commit(c2.body as never, now))
    await handOn(await chain.frames.commit(c3.body as never, now))
    // Nothing of c2 or c3 yet: the repo waits for its resync.
    const commits = () =>
      sink.items.map((i) => i.event).filter((e): e is CommitEvent => e?.kind === 'commit')
    expect(commits()).toEqual([])
    release()
    await sink.until((items) => items.some((i) => i.event?.kind === 'commit'))
    await sink.until((items) => {
      const last = items.at(-1)?.event
      return last?.kind === 'chain' && last.rev === repo.commit.rev
    })
    expect(commits().map((e) => e.rkey)).toEqual(['d'])
    const kinds = sink.items.map((i) => i.event?.kind ?? null).filter(Boolean)
    expect(kinds.indexOf('snapshot')).toBeLessThan(kinds.indexOf('commit'))
    const last = sink.items.at(-1)?.event as ChainEvent
    expect(last).toMatchObject({
      state: 'synchronized',
      rev: repo.commit.rev,
      data: repo.commit.data.toString(),
    })
    await chain.close()
  })

  it('is bounded: a repo past its share loses its buffer until it resyncs', () => {
    const buf = new ResyncBuffer({ logger: silentLogger(), perRepo: 2, maxBytes: 10_000 })
    const body = (repo: string, size: number) =>
      ({ repo, blocks: new Uint8Array(size), ops: [] }) as never
    expect(buf.hold(body('did:a', 100), 0)).toBe(true)
    expect(buf.hold(body('did:a', 100), 0)).toBe(true)
    expect(buf.hold(body('did:a', 100), 0)).toBe(false)
    expect(buf.hold(body('did:a', 100), 0)).toBe(false)
    expect(buf.take('did:a')).toEqual([])
    expect(buf.hold(body('did:b', 20_000), 0)).toBe(false)
    expect(buf.hold(body('did:a', 100), 0)).toBe(true)
    expect(buf.bytes).toBe(612)
  })
})
