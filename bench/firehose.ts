import { IdResolver, MemoryCache } from '@atproto/identity'
import { Firehose, MemoryRunner } from '@atproto/sync'
import pino from 'pino'
import { applyBatch } from '../src/indexer/apply.ts'
import { createDidResolver } from '../src/ingest/did-resolver.ts'
import type { ChainState } from '../src/ingest/firehose/chain/firehose-chain.ts'
import { createFirehoseSource } from '../src/ingest/firehose/source.ts'
import { seqCursor } from '../src/model/cursor.ts'
import type { CommitEvent, IndexEvent, SourceItem } from '../src/model/events.ts'
import { createMetrics } from '../src/observe/metrics.ts'
import type { FrameSet } from '../test/helpers/firehose/frames.ts'
import { loadOrBuildFrames } from '../test/helpers/firehose/frames-cache.ts'
import { startPlcStub } from '../test/helpers/firehose/plc-stub.ts'
import { spawnNode } from '../test/helpers/node-child.ts'
import { createTempDatabase } from '../test/helpers/pg-cluster.ts'
import { cpuSince, cpuSnapshot } from './lib/cpu.ts'
import { benchEnv, count } from './lib/env.ts'
import { type Backend, openBenchRuntime, tempDataDir } from './lib/ingest-kit.ts'
import { type Check, row, type ScenarioResult } from './lib/report.ts'
import { isMain, runAsMain } from './lib/scenario.ts'
import { scenarioResult, startScenario } from './lib/scenario-run.ts'
import { COLLECTIONS } from './lib/traffic.ts'

// Firehose decode, filter and verify: a local subscribeRepos server (its own process)
// replays real signed commits, >= 95% of them in other collections. The product's
// firehose source (frames processed concurrently, handed on in order, matching commits
// verified: signature and MST proof) reads them into a collecting sink; the baseline is
// @atproto/sync's Firehose with a MemoryRunner, a cached IdResolver, the same collection
// filter and a no-op handler, reading the same frames from the same server. Afterwards the
// product's events are indexed, to check that every matching op made it.

export interface FirehoseOptions {
  /** Where the events are indexed for the check; null: PGlite in memory. */
  serverUrl: string | null
  frames: number
  matchingShare: number
  noiseRepos: number
  lettaDids: number
  /**
   * Share of the noise repos tracked as well (they hold Letta records here, as a Letta
   * user who also posts): with chain state, every one of their commits is verified.
   */
  trackedNoiseShare?: number
  log?: (msg: string) => void
}

export function firehoseOptionsFromEnv(): FirehoseOptions {
  return {
    serverUrl: benchEnv.serverUrl,
    frames: count('BENCH_FIREHOSE_FRAMES', 100_000),
    matchingShare: 0.04,
    noiseRepos: count('BENCH_FIREHOSE_NOISE_REPOS', 2000),
    lettaDids: count('BENCH_FIREHOSE_LETTA_DIDS', 200),
    trackedNoiseShare: Number(process.env.BENCH_FIREHOSE_TRACKED_SHARE ?? 0.05),
    log: (m) => console.log(`[firehose] ${m}`),
  }
}

async function startFrameServer(path: string) {
  const child = spawnNode(
    [new URL('../test/helpers/firehose/frame-server-child.ts', import.meta.url).pathname, path],
    {},
  )
  const port = await new Promise<number>((resolve, reject) => {
    child.proc.stdout?.once('data', (d: Buffer) => resolve(Number(d.toString().trim())))
    child.exited.then(() => reject(new Error(`frame server exited:\n${child.output.join('')}`)))
  })
  return { url: `ws://127.0.0.1:${port}`, stop: () => child.stop() }
}

/**
 * The chain state as the runtime wires it (src/cli/create-source.ts), in memory: the
 * Letta repos and `tracked` noise repos are tracked, none has a stored head yet (the first
 * commit seen starts its chain), none waits for a resync.
 */
function memoryChainState(tracked: string[]): ChainState {
  return { loadHead: async () => null, tracked, unsynchronized: [] }
}

/** The product's source until the item with seq `lastSeq`; returns the commit events. */
async function runProduct(
  url: string,
  plcUrl: string,
  set: FrameSet,
  fromSeq: number,
  tracked: string[] | null,
) {
  const logger = pino({ level: 'silent' })
  const metrics = createMetrics({ version: 'bench', collections: COLLECTIONS })
  const resolver = createDidResolver({ plcUrl })
  for (const e of set.expected) await resolver.resolveKey(e.did)
  const source = createFirehoseSource({
    url,
    collections: COLLECTIONS,
    resolver,
    verifyHandle: async () => null,
    logger,
    metrics,
    chain: tracked ? memoryChainState(tracked) : undefined,
  })
  const events: IndexEvent[] = []
  const abort = new AbortController()
  const sink = {
    async push(item: SourceItem) {
      if (item.event) events.push(item.event)
      if (item.cursor !== null && item.cursor.value >= set.lastSeq) abort.abort()
    },
  }
  const cpu = cpuSnapshot()
  const started = performance.now()
  await source.run(sink, seqCursor(fromSeq), abort.signal)
  const elapsedS = (performance.now() - started) / 1000
  const got = await metrics.eventsTotal.get()
  const errors = got.values
    .filter((v) => v.labels.outcome === 'error')
    .reduce((a, v) => a + v.value, 0)
  const breaks = (await metrics.chainBreaksTotal.get()).values.reduce((a, v) => a + v.value, 0)
  return { elapsedS, events, errors, breaks, cpu: cpuSince(cpu) }
}

async function runBaseline(url: string, plcUrl: string, set: FrameSet, fromSeq: number) {
  // The default fetch refuses loopback addresses (SSRF guard); the stub lives on loopback.
  const idResolver = new IdResolver({
    plcUrl,
    didCache: new MemoryCache(),
    fetch: globalThis.fetch,
  })
  for (const e of set.expected) await idResolver.did.resolveAtprotoKey(e.did)
  let handled = 0
  let errors = 0
  let done: () => void = () => {}
  const finished = new Promise<void>((r) => {
    done = r
  })
  const runner = new MemoryRunner({
    startCursor: fromSeq,
    setCursor: async (cursor) => {
      if (cursor >= set.lastSeq) done()
    },
  })
  const firehose = new Firehose({
    service: url,
    runner,
    idResolver,
    filterCollections: COLLECTIONS,
    unauthenticatedHandles: true,
    handleEvent: async (evt) => {
      if (evt.event === 'create' || evt.event === 'update' || evt.event === 'delete') handled++
    },
    onError: () => {
      errors++
    },
  })
  const cpu = cpuSnapshot()
  const started = performance.now()
  void firehose.start()
  await finished
  const elapsedS = (performance.now() - started) / 1000
  const split = cpuSince(cpu)
  await firehose.destroy()
  return { elapsedS, handled, errors, cpu: split }
}

const opKey = (e: {
  did: string
  collection: string
  rkey: string
  op: string
  cid: string | null
}) => `${e.did} ${e.collection} ${e.rkey} ${e.op} ${e.cid}`

export async function runFirehose(o: FirehoseOptions): Promise<ScenarioResult> {
  const log = o.log ?? (() => {})
  const run = startScenario()
  const set = await loadOrBuildFrames(
    {
      frames: o.frames,
      matchingShare: o.matchingShare,
      noiseRepos: o.noiseRepos,
      lettaDids: o.lettaDids,
      contentBytes: benchEnv.contentBytes,
    },
    log,
  )
  const plc = await startPlcStub(set.keys)
  const server = await startFrameServer(set.path)
  const { rows, checks, details } = run
  Object.assign(details, {
    frames: set.frames.length,
    matchingFrames: set.matchingFrames,
    commitFrames: set.commitFrames,
    otherShare: 1 - set.matchingFrames / set.frames.length,
    avgFrameBytes: set.bytes / set.frames.length,
  })
  try {
    // A short pass over the tail of the stream first, so neither side is timed while cold.
    const warm = Math.max(0, set.lastSeq - Math.min(5000, Math.floor(set.frames.length / 5)))
    const letta = new Set(set.expected.map((e) => e.did))
    const noise = Object.keys(set.keys).filter((d) => !letta.has(d))
    const trackedNoise = noise.slice(0, Math.round(noise.length * (o.trackedNoiseShare ?? 0.05)))
    const tracked = [...letta, ...trackedNoise]
    details.trackedRepos = { letta: letta.size, noise: trackedNoise.length, of: noise.length }
    await runProduct(server.url, plc.url, set, warm, tracked)
    await runBaseline(server.url, plc.url, set, warm)
    const product = await runProduct(server.url, plc.url, set, 0, tracked)
    log(`product: ${(set.frames.length / product.elapsedS).toFixed(0)} frames/s`)
    // Before Sync 1.1: the same source without chain state (matching commits only).
    const unchained = await runProduct(server.url, plc.url, set, 0, null)
    log(
      `product without chain state: ${(set.frames.length / unchained.elapsedS).toFixed(0)} frames/s`,
    )
    const baseline = await runBaseline(server.url, plc.url, set, 0)
    log(`baseline: ${(set.frames.length / baseline.elapsedS).toFixed(0)} frames/s`)

    // Multisets: a repo may write the same record twice (same key, same CID).
    const tallyOf = (keys: string[]) => {
      const m = new Map<string, number>()
      for (const k of keys) m.set(k, (m.get(k) ?? 0) + 1)
      return m
    }
    const want = tallyOf(set.expected.map(opKey))
    const commits = product.events.filter((e): e is CommitEvent => e.kind === 'commit')
    const got = tallyOf(commits.map((e) => opKey({ ...e, op: e.op })))
    const diff = (a: Map<string, number>, b: Map<string, number>) =>
      [...a].reduce((n, [k, c]) => n + Math.max(0, c - (b.get(k) ?? 0)), 0)
    const missing = diff(want, got)
    const extra = diff(got, want)
    checks.push({
      name: 'every matching op came out of the source, verified, and nothing else',
      ok: missing === 0 && extra === 0 && product.errors === 0,
      detail: `${commits.length} of ${set.expected.length} ops; ${missing} missing, ${extra} unexpected, ${product.errors} errors`,
    })
    checks.push({
      name: 'the baseline saw every matching op too',
      ok: baseline.handled === set.expected.length && baseline.errors === 0,
      detail: `${baseline.handled} of ${set.expected.length}, ${baseline.errors} errors`,
    })
    details.indexed = await indexEvents(o.serverUrl, product.events, set, checks)

    const fps = set.frames.length / product.elapsedS
    const bfps = set.frames.length / baseline.elapsedS
    details.product = { elapsedS: product.elapsedS, framesPerS: fps, cpu: product.cpu }
    details.baseline = { elapsedS: baseline.elapsedS, framesPerS: bfps, cpu: baseline.cpu }
    const ufps = set.frames.length / unchained.elapsedS
    details.unchained = { elapsedS: unchained.elapsedS, framesPerS: ufps, cpu: unchained.cpu }
    checks.push({
      name: 'the chain of every tracked repo held (no break, no resync)',
      ok: product.breaks === 0,
      detail: `${product.breaks} breaks`,
    })
    rows.push(
      row(
        'frames/s',
        fps,
        'frames/s',
        '>= 3x and >= 30,000 frames/s',
        fps >= 3 * bfps && fps >= 30_000,
        bfps,
      ),
      row(
        'frames/s, chain state vs none',
        fps,
        'frames/s',
        'informational (baseline: the same source without chain state)',
        null,
        ufps,
      ),
    )
  } finally {
    await server.stop()
    await plc.close()
  }
  return scenarioResult(run, o, {
    scenario: 'firehose',
    title: 'Firehose decode, filter, verify',
    params: { ...o, log: undefined },
    notes: [
      `${set.frames.length.toLocaleString('en-US')} frames, ${((1 - set.matchingFrames / set.frames.length) * 100).toFixed(1)}% in other collections (posts, likes, follows of ${o.noiseRepos} repos) or account events; matching commits are verified (secp256k1 signature and MST proof) by both sides; with chain state (as the runtime wires it) the ${set.expected.length ? new Set(set.expected.map((e) => e.did)).size : 0} Letta repos and ${Math.round((o.trackedNoiseShare ?? 0.05) * 100)}% of the noise repos are tracked, so each of their commits is verified and chain-checked (since, prevData, MST inversion); DID keys from a loopback PLC, cached by both resolvers and warmed before timing`,
    ],
  })
}

/** Indexes the product's events in batches and checks each matching op was applied. */
async function indexEvents(
  serverUrl: string | null,
  events: IndexEvent[],
  set: FrameSet,
  checks: Check[],
): Promise<Record<string, number>> {
  const temp = serverUrl ? await createTempDatabase(serverUrl, 'bench_firehose') : null
  const dir = temp ? null : tempDataDir('firehose')
  const backend: Backend = temp
    ? { kind: 'postgres', url: temp.url }
    : { kind: 'pglite', dataDir: dir!.dataDir }
  const rt = await openBenchRuntime(backend)
  try {
    const outcomes: Record<string, number> = {}
    for (let i = 0; i < events.length; i += 1000) {
      const r = await applyBatch(rt.ctx, events.slice(i, i + 1000), null)
      for (const x of r.outcomes) {
        if (x.op === 'account' || x.op === 'identity') continue
        outcomes[x.outcome] = (outcomes[x.outcome] ?? 0) + 1
      }
    }
    const applied = (outcomes.indexed ?? 0) + (outcomes.invalid ?? 0)
    checks.push({
      name: 'every matching op indexed',
      ok: applied === set.expected.length,
      detail: `${applied} of ${set.expected.length} applied (${JSON.stringify(outcomes)})`,
    })
    return outcomes
  } finally {
    await rt.close()
    await temp?.drop()
    dir?.cleanup()
  }
}

if (isMain(import.meta.url)) await runAsMain(() => runFirehose(firehoseOptionsFromEnv()))
