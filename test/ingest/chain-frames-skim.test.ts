import { cborEncode } from '@atproto/common'
import { CID } from 'multiformats/cid'
import { describe, expect, it } from 'vitest'
import type { DidResolver } from '../../src/ingest/did-resolver.ts'
import type { ChainFrames } from '../../src/ingest/firehose/chain/chain-frames.ts'
import { createFrameProcessor } from '../../src/ingest/firehose/frame.ts'
import { seqCursor } from '../../src/model/cursor.ts'
import { COLLECTIONS, PROMPT, silentLogger, testMetrics } from '../helpers/ingest-kit.ts'

// Which frames reach the Sync 1.1 chain checks: every #commit and #sync of a tracked repo,
// wanted ops or not; a repo becomes tracked on its first wanted commit; the skim still skips
// the rest of the network. (The checks themselves: chain-check.test.ts, e2e/sync-chain.)

const TRACKED = 'did:plc:trackedaaaaaaaaaaaaaaaaa'
const OTHER = 'did:plc:otheraaaaaaaaaaaaaaaaaaa'
const CID_A = CID.parse('bafyreifp3j6zvzq5nzg3qg6e2juazrury2xlpmyuasy7zym5xgbmoqwo5a')
const frame = (t: string, body: object) =>
  Buffer.concat([cborEncode({ op: 1, t }), cborEncode(body)])
const commit = (repo: string, seq: number, path: string) =>
  frame('#commit', {
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
    time: '2026-01-01T00:00:00.000Z',
  })

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
  const resolver = {} as DidResolver
  const process = createFrameProcessor({
    collections: COLLECTIONS,
    resolver,
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
    expect(skipped.items).toEqual([
      { event: null, cursor: seqCursor(2), timeUs: Date.parse('2026-01-01') * 1000 },
    ])
    expect(r.judged).toEqual([`commit ${TRACKED} 1`])
  })

  it('tracks a repo from its first wanted commit, before that commit is checked', async () => {
    const r = rig()
    const first = r.process(commit(OTHER, 3, `${PROMPT}/a`))
    // Synchronously: the frames right behind it must not be skimmed.
    expect(r.tracked.has(OTHER)).toBe(true)
    await first
    await r.process(commit(OTHER, 4, 'app.bsky.feed.post/b'))
    expect(r.judged).toEqual([`commit ${OTHER} 3`, `commit ${OTHER} 4`])
  })

  it('a #sync goes to the checks for tracked repos only', async () => {
    const r = rig()
    const sync = (did: string, seq: number) =>
      frame('#sync', {
        seq,
        did,
        rev: '3m6sm7ncxdj2b',
        blocks: new Uint8Array(),
        time: '2026-01-01T00:00:00.000Z',
      })
    await r.process(sync(TRACKED, 5))
    const other = await r.process(sync(OTHER, 6))
    expect(other.items.map((i) => i.event)).toEqual([null])
    expect(r.judged).toEqual([`sync ${TRACKED} 5`])
  })
})
