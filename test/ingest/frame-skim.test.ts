import { cborDecodeMulti, cborEncode } from '@atproto/common'
import { CID } from 'multiformats/cid'
import { describe, expect, it } from 'vitest'
import { collectionNeedles, skimUnmatchedCommit } from '../../src/ingest/firehose/frame-skim.ts'
import { COLLECTIONS, PROMPT } from '../helpers/ingest-kit.ts'

const CID_A = CID.parse('bafyreifp3j6zvzq5nzg3qg6e2juazrury2xlpmyuasy7zym5xgbmoqwo5a')
const TIME = '2026-01-01T00:00:00.000Z'
const needles = collectionNeedles(COLLECTIONS)
const frame = (header: object, body: object) =>
  new Uint8Array(Buffer.concat([cborEncode(header), cborEncode(body)]))
const HEADER = { op: 1, t: '#commit' }
const body = (over: Record<string, unknown> = {}) => ({
  seq: 123456789,
  rebase: false,
  tooBig: false,
  repo: 'did:plc:aaaaaaaaaaaaaaaaaaaaaaaa',
  commit: CID_A,
  rev: '3m6sm7ncxdj2b',
  since: null,
  blocks: new Uint8Array(2000).fill(7),
  ops: [
    { action: 'create', path: 'app.bsky.feed.post/3m6sm7ncxdj2b', cid: CID_A },
    { action: 'delete', path: 'app.bsky.feed.like/3m6sm7ncxdj2c', cid: null },
  ],
  blobs: [],
  time: TIME,
  ...over,
})

describe('collectionNeedles', () => {
  it('uses the common prefix when it is long, each name when it is not', () => {
    expect(collectionNeedles(COLLECTIONS).map(String)).toEqual(['xyz.quasigod.lab.letta.'])
    // `app.bsky.` is in nearly every frame of the network: useless as a filter.
    expect(collectionNeedles(['app.bsky.feed.post', 'app.bsky.actor.profile']).map(String)).toEqual(
      ['app.bsky.feed.post', 'app.bsky.actor.profile'],
    )
    expect(collectionNeedles([])).toEqual([])
  })
})

describe('skimUnmatchedCommit', () => {
  it('reads seq and time of a commit to other collections', () => {
    expect(skimUnmatchedCommit(frame(HEADER, body()), needles)).toEqual({
      seq: 123456789,
      time: TIME,
      repo: 'did:plc:aaaaaaaaaaaaaaaaaaaaaaaa',
    })
    // A large seq (more than 32 bits) and a missing time.
    const { time: _, ...noTime } = body({ seq: 2 ** 40 + 3 })
    expect(skimUnmatchedCommit(frame(HEADER, noTime), needles)).toEqual({
      seq: 2 ** 40 + 3,
      time: null,
      repo: 'did:plc:aaaaaaaaaaaaaaaaaaaaaaaa',
    })
  })

  it('leaves to the full decoder every frame it cannot prove irrelevant and well-formed', () => {
    const cases: Record<string, Uint8Array> = {
      'a wanted op': frame(
        HEADER,
        body({ ops: [{ action: 'create', path: `${PROMPT}/3m6sm7ncxdj2b`, cid: CID_A }] }),
      ),
      'a wanted name anywhere (a record block)': frame(
        HEADER,
        body({ blocks: Buffer.from(`..."$type":"${PROMPT}"...`) }),
      ),
      'an account frame': frame(
        { op: 1, t: '#account' },
        { seq: 1, did: 'did:plc:x', active: true },
      ),
      'an error frame': frame({ op: -1 }, { error: 'FutureCursor' }),
      'no repo': frame(HEADER, body({ repo: undefined })),
      'repo not text': frame(HEADER, body({ repo: 5 })),
      'ops not an array': frame(HEADER, body({ ops: 'x' })),
      'an op without action': frame(HEADER, body({ ops: [{ path: 'a.b.c/1' }] })),
      'an op that is not a map': frame(HEADER, body({ ops: [7] })),
      'blocks not bytes': frame(HEADER, body({ blocks: 'x' })),
      'commit not a CID': frame(HEADER, body({ commit: 'x' })),
      'a negative seq': frame(HEADER, body({ seq: -1 })),
      'a seq past 2^53': frame(HEADER, body({ seq: 2n ** 60n })),
      'trailing bytes': Buffer.concat([frame(HEADER, body()), Buffer.from([0])]),
      truncated: frame(HEADER, body()).subarray(0, 500),
      'no body': new Uint8Array(cborEncode(HEADER)),
      empty: new Uint8Array(),
    }
    for (const [what, bytes] of Object.entries(cases)) {
      expect({ what, got: skimUnmatchedCommit(bytes, needles) }).toEqual({ what, got: null })
    }
  })

  it('never disagrees with the full decoder, on thousands of damaged frames', () => {
    // Whatever the skim accepts, the full path must read as a well-formed commit with the
    // same seq and time and no wanted op; flipped and cut bytes probe the edges.
    let rand = 42
    const next = () => {
      // xorshift32: deterministic, and unlike a float LCG it does not lose its low bits.
      rand ^= rand << 13
      rand ^= rand >>> 17
      rand ^= rand << 5
      return rand >>> 0
    }
    const base = frame(HEADER, body())
    const structure = [...base.keys()].filter((i) => base[i] !== 7)
    let accepted = 0
    let structural = 0
    for (let i = 0; i < 5000; i++) {
      const bytes = Uint8Array.from(base)
      const flips = 1 + (next() % 3)
      for (let f = 0; f < flips; f++) {
        // Half the flips hit the frame's structure (every byte outside the blocks of 7s).
        const at = i % 2 ? structure[next() % structure.length] : next() % bytes.length
        bytes[at] = next() % 256
      }
      const cut = next() % 4 === 0 ? bytes.subarray(0, next() % bytes.length) : bytes
      const got = skimUnmatchedCommit(cut, needles)
      if (!got) continue
      accepted++
      if (i % 2) structural++
      const [header, decoded] = cborDecodeMulti(cut) as [
        { op: number; t: string },
        {
          seq: number
          time: unknown
          repo: unknown
          rev: unknown
          blocks: unknown
          commit: unknown
          ops: Array<{ path: unknown; action: unknown }>
        },
      ]
      expect(header).toEqual(HEADER)
      expect(decoded.seq).toBe(got.seq)
      expect(typeof decoded.time === 'string' ? decoded.time : null).toBe(got.time)
      expect(typeof decoded.repo).toBe('string')
      expect(typeof decoded.rev).toBe('string')
      expect(decoded.blocks).toBeInstanceOf(Uint8Array)
      expect(decoded.commit).not.toBeNull()
      for (const op of decoded.ops) {
        expect(typeof op.path).toBe('string')
        expect(typeof op.action).toBe('string')
        expect(COLLECTIONS).not.toContain(String(op.path).split('/')[0])
      }
    }
    // Most flips land in the 2,000 block bytes, which the skim rightly ignores.
    expect(accepted).toBeGreaterThan(1000)
    expect(structural).toBeGreaterThan(300)
  })
})
