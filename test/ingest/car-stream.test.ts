import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Readable } from 'node:stream'
import { Secp256k1Keypair } from '@atproto/crypto'
import {
  BlockMap,
  blocksToCarFile,
  MemoryBlockstore,
  Repo,
  readCarWithRoot,
  WriteOpAction,
} from '@atproto/repo'
import pino from 'pino'
import type { Counter } from 'prom-client'
import { afterEach, describe, expect, it } from 'vitest'
import { runBackfill } from '../../src/ingest/backfill/backfill.ts'
import { readRepoCar } from '../../src/ingest/backfill/car-stream.ts'
import { fetchRepoSnapshot } from '../../src/ingest/backfill/repo-snapshot.ts'
import { UpstreamLimiter } from '../../src/ingest/backfill/upstream-limiter.ts'
import type { RepoSnapshotEvent } from '../../src/model/events.ts'
import { buildBigRepo, fixedResolver } from '../helpers/firehose/big-repo.ts'
import { COLLECTIONS, PROMPT, testMetrics } from '../helpers/ingest-kit.ts'

// getRepo read as a stream (src/ingest/backfill/car-stream.ts) and bad upstreams: a CAR that ends
// early, a block whose bytes do not hash to its CID, a PDS that answers 429 forever, a
// PDS that sends a 2 GB body. Each is refused with a counted reason and a log line naming
// the DID; nothing is handed to the writer; memory stays bounded.

const servers: Server[] = []
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections()
    await new Promise((r) => s.close(r))
  }
})

async function count(c: Counter<string>, labels: Record<string, string>): Promise<number> {
  const got = await c.get()
  const v = got.values.find((x) => Object.entries(labels).every(([k, val]) => x.labels[k] === val))
  return v?.value ?? 0
}

const DID = 'did:plc:carstreamaaaaaaaaaaaaaaa'
const prompt = (i: number) => ({
  $type: PROMPT,
  content: `p${i}`,
  compiledAt: '2026-01-01T00:00:00.000Z',
})

async function smallRepo() {
  const kp = await Secp256k1Keypair.create()
  const storage = new MemoryBlockstore()
  const writes = [1, 2, 3].map((i) => ({
    action: WriteOpAction.Create as const,
    collection: PROMPT as `${string}.${string}.${string}`,
    rkey: `r${i}`,
    record: prompt(i),
  }))
  const others = Array.from({ length: 40 }, (_, i) => ({
    action: WriteOpAction.Create as const,
    collection: 'app.bsky.feed.post' as const,
    rkey: `p${i}`,
    record: {
      $type: 'app.bsky.feed.post',
      text: `post ${i}`,
      createdAt: '2026-01-01T00:00:00.000Z',
    },
  }))
  const repo = await Repo.create(storage, DID, kp, [...writes, ...others])
  return { kp, car: await blocksToCarFile(repo.cid, storage.blocks) }
}

type Handler = (
  req: import('node:http').IncomingMessage,
  res: import('node:http').ServerResponse,
) => void
async function serve(handler: Handler) {
  const hits = { n: 0 }
  const server = createServer((req, res) => {
    hits.n++
    handler(req, res)
  })
  servers.push(server)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits }
}

/** A PDS streaming `body()` as the getRepo answer. */
const streamServer = (body: () => AsyncIterable<Uint8Array>) =>
  serve((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/vnd.ipld.car' })
    Readable.from(body()).pipe(res)
  })

const carServer = (car: Uint8Array) =>
  serve((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/vnd.ipld.car' })
    res.end(Buffer.from(car))
  })

function logCapture() {
  const lines: Array<Record<string, unknown>> = []
  const logger = pino({ level: 'warn' }, { write: (s: string) => void lines.push(JSON.parse(s)) })
  return { logger, lines }
}

/** A backfill of one DID from `url`; what reached the writer, the summary, logs and metrics. */
async function backfillFrom(
  url: string,
  key: string,
  over: { limiter?: UpstreamLimiter; maxBytes?: number } = {},
) {
  const metrics = testMetrics()
  const { logger, lines } = logCapture()
  const emitted: RepoSnapshotEvent[] = []
  const summary = await runBackfill({
    logger,
    metrics,
    resolver: fixedResolver(url, key),
    collections: COLLECTIONS,
    dids: [DID],
    concurrency: 1,
    isDone: () => false,
    markDone: () => {},
    emit: async (s) => void emitted.push(s),
    signal: new AbortController().signal,
    progress: false,
    allowPrivateNetwork: true,
    attempts: 1,
    limiter: over.limiter ?? new UpstreamLimiter(),
    limits: over.maxBytes ? { maxBytes: over.maxBytes } : undefined,
  })
  const failed = (reason: string) => count(metrics.repoFetchFailuresTotal, { reason })
  return { summary, emitted, lines, metrics, failed }
}

function expectRefused(r: Awaited<ReturnType<typeof backfillFrom>>, reason: string) {
  expect(r.emitted).toEqual([])
  expect(r.summary).toMatchObject({ failed: 1, done: 0 })
  const line = r.lines.find((l) => l.msg === 'backfill: repo failed')
  expect(line).toMatchObject({ did: DID, code: reason })
}

/** A generated repo (test/helpers/firehose/big-repo.ts: MST nodes after the records). */
async function generated(otherRecords: number, otherRecordBytes: number, prompts: number) {
  const kp = await Secp256k1Keypair.create()
  const wanted = { collection: PROMPT, count: prompts, record: prompt }
  const repo = await buildBigRepo({ did: DID, keypair: kp, otherRecords, otherRecordBytes, wanted })
  return { kp, repo }
}

describe('getRepo as a stream', () => {
  it('keeps the wanted records of a repo whose MST nodes come after its records', async () => {
    const { kp, repo } = await generated(300, 2000, 5)
    const server = await streamServer(repo.car)
    const r = await backfillFrom(server.url, kp.did())
    expect(r.summary).toMatchObject({ done: 1, failed: 0, records: 5 })
    const keys = r.emitted[0].records.map((x) => `${x.collection}/${x.rkey}`).sort()
    expect(keys).toEqual([...repo.wantedKeys].sort())
    expect(r.emitted[0].records[0].record).toMatchObject({ $type: PROMPT })
  })

  it('a CAR that ends inside a block is refused as truncated; one cut between blocks as incomplete', async () => {
    const { kp, car } = await smallRepo()
    const mid = await carServer(car.subarray(0, Math.floor(car.length * 0.6)))
    expectRefused(await backfillFrom(mid.url, kp.did()), 'truncated')
    // Cut right after the header and first block: the parser sees a clean end.
    const { root, blocks } = await readCarWithRoot(car)
    const only = new BlockMap()
    only.set(root, blocks.get(root) as Uint8Array)
    const cut = await blocksToCarFile(root, only)
    const clean = await carServer(cut)
    const r = await backfillFrom(clean.url, kp.did())
    expectRefused(r, 'incomplete')
    expect(await r.failed('incomplete')).toBe(1)
  })

  it('a block whose bytes do not hash to its CID is refused with bad_block_hash', async () => {
    const { kp, car } = await smallRepo()
    const bad = Buffer.from(car)
    // Flip a byte inside a record near the middle (past the header and the first blocks).
    const at = bad.indexOf(Buffer.from('post 20'))
    bad[at + 5] ^= 1
    const server = await carServer(bad)
    const r = await backfillFrom(server.url, kp.did())
    expectRefused(r, 'bad_block_hash')
    expect(await r.failed('bad_block_hash')).toBe(1)
  })

  it('a PDS that answers 429 forever is waited on, counted, and given up after the bound', async () => {
    const { kp } = await smallRepo()
    const server = await serve((_req, res) => {
      res.writeHead(429, {
        'retry-after': '0',
        'ratelimit-limit': '10',
        'ratelimit-remaining': '0',
      })
      res.end('{"error":"RateLimitExceeded"}')
    })
    const limiter = new UpstreamLimiter({ maxWaits: 4, backoffMs: 10 })
    const r = await backfillFrom(server.url, kp.did(), { limiter })
    expectRefused(r, 'rate_limited')
    expect(server.hits.n).toBe(4)
    const c = (status: string) =>
      count(r.metrics.upstreamRequestsTotal, {
        endpoint: 'com.atproto.sync.getRepo',
        status,
      })
    expect(await c('429')).toBe(4)
    expect(await r.failed('rate_limited')).toBe(1)
  })

  it('a 2 GB body is cut at the bound without being held; a block claiming 2 GB too', async () => {
    const { kp, repo } = await generated(50, 1000, 1)
    let sent = 0
    // The real header and blocks, then blocks of noise until 2 GB (never reached).
    const server = await streamServer(async function* () {
      for await (const chunk of repo.car()) yield chunk
      const noise = await rawBlock(64 * 1024)
      while (sent < 2 * 1024 ** 3) {
        sent += noise.byteLength
        yield noise
      }
    })
    const rssBefore = process.memoryUsage().rss
    const r = await backfillFrom(server.url, kp.did(), { maxBytes: 32 * 1024 ** 2 })
    expectRefused(r, 'too_large')
    expect(sent).toBeLessThan(256 * 1024 ** 2)
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(200 * 1024 ** 2)

    const huge = await streamServer(async function* () {
      for await (const chunk of repo.car()) yield chunk
      // A block header announcing 2 GB, then zeros.
      yield Uint8Array.from([0x80, 0x80, 0x80, 0x80, 0x08])
      const zeros = new Uint8Array(1024 * 1024)
      for (let i = 0; i < 2048; i++) yield zeros
    })
    expectRefused(await backfillFrom(huge.url, kp.did()), 'block_too_large')
  })

  it('reads a repo the same as fetchRepoSnapshot did before (small CAR, one piece)', async () => {
    const { kp, car } = await smallRepo()
    const server = await carServer(car)
    const resolver = fixedResolver(server.url, kp.did())
    const snap = await fetchRepoSnapshot(DID, {
      resolver,
      collections: COLLECTIONS,
      allowPrivateNetwork: true,
    })
    expect(snap.records.map((x) => x.rkey).sort()).toEqual(['r1', 'r2', 'r3'])
    const direct = await readRepoCar([car], COLLECTIONS)
    expect(direct.stats.blocks).toBeGreaterThan(40)
    expect(direct.records).toHaveLength(3)
  })
})

async function rawBlock(size: number): Promise<Uint8Array> {
  const { CID } = await import('multiformats/cid')
  const { sha256 } = await import('multiformats/hashes/sha2')
  const bytes = new Uint8Array(size).fill(7)
  const cid = CID.createV1(0x55, await sha256.digest(bytes))
  const len = cid.bytes.length + bytes.length
  const varint: number[] = []
  for (let n = len; ; n >>>= 7) {
    if (n < 0x80) {
      varint.push(n)
      break
    }
    varint.push((n & 0x7f) | 0x80)
  }
  return Buffer.concat([Uint8Array.from(varint), cid.bytes, bytes])
}
