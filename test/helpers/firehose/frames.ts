import { randomBytes } from 'node:crypto'
import { cborEncode } from '@atproto/common'
import { Secp256k1Keypair } from '@atproto/crypto'
import {
  BlockMap,
  blocksToCarFile,
  MemoryBlockstore,
  type RecordWriteOp,
  Repo,
  WriteOpAction,
} from '@atproto/repo'
import { createGenerator, type JetstreamEvent } from '../../../demo-network/generator.ts'
import { createRandom } from '../../../demo-network/random.ts'
import { COLLECTIONS } from '../ingest-kit.ts'

// subscribeRepos traffic made of real signed commits: every repo is an @atproto/repo Repo
// in memory with its own secp256k1 key, every frame is what a PDS sequences (#commit with
// a CAR of the new blocks and the MST proof, or #account). Letta writes come from the demo
// generator; the rest of the network is posts, likes and follows by other repos. Building
// costs about a millisecond per commit, so frames-cache.ts keeps built sets on disk.

export interface ExpectedOp {
  did: string
  collection: string
  rkey: string
  op: 'create' | 'update' | 'delete'
  cid: string | null
}

export interface FrameSet {
  frames: Uint8Array[]
  /** did -> did:key of its signing key */
  keys: Record<string, string>
  expected: ExpectedOp[]
  lastSeq: number
  commitFrames: number
  matchingFrames: number
  bytes: number
}

export interface FrameOptions {
  frames: number
  /** Share of frames that carry a Letta op (the rest: other collections and accounts). */
  matchingShare: number
  noiseRepos: number
  lettaDids: number
  /** Bytes of a Letta prompt's `content` (the benches take theirs from the environment). */
  contentBytes: { min: number; max: number }
}

const NOISE = ['app.bsky.feed.post', 'app.bsky.feed.like', 'app.bsky.graph.follow']
const B32 = 'abcdefghijklmnopqrstuvwxyz234567'

function randomPlc(): string {
  const b = randomBytes(24)
  return `did:plc:${Array.from(b, (x) => B32[x & 31]).join('')}`
}

type CID = NonNullable<Awaited<ReturnType<Repo['data']['get']>>>

interface RepoState {
  did: string
  key: Secp256k1Keypair
  repo: Repo
  /** path -> record CID, for the `prev` of updates and deletes. */
  cids: Map<string, CID>
}

async function newRepo(did: string): Promise<RepoState> {
  const key = await Secp256k1Keypair.create()
  const repo = await Repo.create(new MemoryBlockstore(), did, key)
  return { did, key, repo, cids: new Map() }
}

function header(t: string): Uint8Array {
  return cborEncode({ op: 1, t })
}

function frameOf(t: string, body: Record<string, unknown>): Uint8Array {
  const h = header(t)
  const b = cborEncode(body)
  const out = new Uint8Array(h.length + b.length)
  out.set(h, 0)
  out.set(b, h.length)
  return out
}

let tidClock = 1_764_460_800_000_000
function nextTid(): string {
  // Sortable base32 of microseconds << 10, as TIDs are; unique within the build.
  let n = BigInt(tidClock++) << 10n
  let s = ''
  for (let i = 0; i < 13; i++) {
    s = '234567abcdefghijklmnopqrstuvwxyz'[Number(n & 31n)] + s
    n >>= 5n
  }
  return s
}

async function commitFrame(
  st: RepoState,
  write: RecordWriteOp,
  seq: number,
  time: string,
): Promise<{ frame: Uint8Array; cid: string | null }> {
  const path = `${write.collection}/${write.rkey}`
  const prev = st.cids.get(path)
  const prevData = st.repo.commit.data
  const commit = await st.repo.formatCommit(write, st.key)
  st.repo = await st.repo.applyCommit(commit)
  const blocks = new BlockMap()
  blocks.addMap(commit.newBlocks)
  blocks.addMap(commit.relevantBlocks)
  let leaf: CID | null = null
  if (write.action === WriteOpAction.Delete) st.cids.delete(path)
  else {
    leaf = await st.repo.data.get(path)
    if (leaf) st.cids.set(path, leaf)
    // A record identical to one the repo already holds is no new block, but the frame must
    // still carry it (the PDS adds such blocks the same way).
    if (leaf && !blocks.has(leaf)) {
      const bytes = await st.repo.storage.getBytes(leaf)
      if (bytes) blocks.set(leaf, bytes)
    }
  }
  const op: Record<string, unknown> = { action: write.action, path, cid: leaf }
  if (prev && write.action !== WriteOpAction.Create) op.prev = prev
  const body = {
    seq,
    rebase: false,
    tooBig: false,
    repo: st.did,
    commit: commit.cid,
    rev: commit.rev,
    since: commit.since,
    blocks: await blocksToCarFile(commit.cid, blocks),
    ops: [op],
    blobs: [],
    prevData,
    time,
  }
  return { frame: frameOf('#commit', body), cid: leaf ? leaf.toString() : null }
}

/**
 * Letta repos in memory, created as the generator first names them: each generator event
 * becomes the frame a PDS would sequence for it (a signed #commit with its MST proof, or an
 * #account). `keys` has each repo's did:key, for a PLC directory.
 */
export class LettaRepos {
  readonly keys: Record<string, string> = {}
  readonly #repos = new Map<string, RepoState>()
  readonly #kept = new Set(COLLECTIONS)

  /** The frame for `ev` at `seq` and the op it carries; null when no frame carries it. */
  async frame(
    ev: JetstreamEvent,
    seq: number,
    time: string,
  ): Promise<{ frame: Uint8Array; op: ExpectedOp | null } | null> {
    if (ev.kind === 'identity') return null
    if (ev.kind === 'commit' && !this.#kept.has(ev.commit.collection)) return null
    let st = this.#repos.get(ev.did)
    if (!st) {
      st = await newRepo(ev.did)
      this.#repos.set(ev.did, st)
      this.keys[ev.did] = st.key.did()
    }
    if (ev.kind === 'account') {
      const body: Record<string, unknown> = { seq, did: ev.did, time, active: ev.account.active }
      if (ev.account.status) body.status = ev.account.status
      return { frame: frameOf('#account', body), op: null }
    }
    const c = ev.commit
    const path = `${c.collection}/${c.rkey}`
    const exists = st.cids.has(path)
    if (c.operation === 'delete' && !exists) return null
    const write = (
      c.operation === 'delete'
        ? { action: WriteOpAction.Delete, collection: c.collection, rkey: c.rkey }
        : {
            action: exists ? WriteOpAction.Update : WriteOpAction.Create,
            collection: c.collection,
            rkey: c.rkey,
            record: c.record,
          }
    ) as RecordWriteOp
    const { frame, cid } = await commitFrame(st, write, seq, time)
    return {
      frame,
      op: { did: st.did, collection: c.collection, rkey: c.rkey, op: write.action, cid },
    }
  }
}

/** A record of another collection (a post, like or follow), made at `createdAt`. */
function noiseRecord(collection: string, seq: number, createdAt: string): Record<string, unknown> {
  if (collection === 'app.bsky.feed.post') {
    return {
      $type: collection,
      text: `post ${seq} ${'lorem ipsum '.repeat(8)}`,
      langs: ['en'],
      createdAt,
    }
  }
  const subject = collection.endsWith('follow')
    ? randomPlc()
    : {
        uri: `at://${randomPlc()}/app.bsky.feed.post/${nextTid()}`,
        cid: 'bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm',
      }
  return { $type: collection, subject, createdAt }
}

/** The #commit frame of a noise repo creating a record of `collection` at `seq`. */
function noiseFrame(st: RepoState, collection: string, seq: number, time: string) {
  // Made at the frame's time; its text names the seq before this frame's.
  const record = noiseRecord(collection, seq - 1, time)
  const write = { action: WriteOpAction.Create, collection, rkey: nextTid(), record }
  return commitFrame(st, write as unknown as RecordWriteOp, seq, time)
}

export async function buildFrames(o: FrameOptions, log: (m: string) => void): Promise<FrameSet> {
  const t0 = performance.now()
  const gen = createGenerator({
    seed: 41,
    dids: o.lettaDids,
    contentBytes: o.contentBytes,
    startTimeUs: 1_764_460_800_000_000,
    meanIntervalUs: 500,
    noiseRatio: 0,
    realCids: false,
  })
  // Seeded like the generator: the share of matching frames is then the same on every
  // build, so a check of it is not a coin toss (Math.random missed 0.95 about 1 run in 20).
  const rnd = createRandom(43)
  const letta = new LettaRepos()
  const noise: RepoState[] = []
  for (let i = 0; i < o.noiseRepos; i++) noise.push(await newRepo(randomPlc()))
  const frames: Uint8Array[] = []
  const expected: ExpectedOp[] = []
  let seq = 0
  let matchingFrames = 0
  let commitFrames = 0
  let bytes = 0
  const baseMs = Date.parse('2025-11-30T00:00:00Z')
  const push = (f: Uint8Array) => {
    frames.push(f)
    bytes += f.length
  }
  while (frames.length < o.frames) {
    const time = new Date(baseMs + seq).toISOString()
    if (rnd.next() < o.matchingShare) {
      const made = await letta.frame(gen.next(), seq + 1, time)
      if (!made) continue
      seq++
      push(made.frame)
      if (made.op) {
        commitFrames++
        matchingFrames++
        expected.push(made.op)
      }
    } else {
      const { frame } = await noiseFrame(rnd.pick(noise), rnd.pick(NOISE), ++seq, time)
      push(frame)
      commitFrames++
    }
    if (frames.length % 20_000 === 0)
      log(`built ${frames.length} frames (${((performance.now() - t0) / 1000).toFixed(0)} s)`)
  }
  const keys: Record<string, string> = { ...letta.keys }
  for (const st of noise) keys[st.did] = st.key.did()
  return { frames, keys, expected, lastSeq: seq, commitFrames, matchingFrames, bytes }
}
