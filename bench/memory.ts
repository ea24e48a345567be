import { execFileSync } from 'node:child_process'
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { RUNTIME_NODE_FLAGS } from '../src/cli/node-flags.ts'
import { nodeFlagsFromEnv, rssMbOf } from '../test/helpers/node-child.ts'
import { createTempDatabase } from '../test/helpers/pg-cluster.ts'
import { type BenchOptions, benchOptionsFromEnv, count, setting } from './lib/env.ts'
import { checkpoint, rawClient } from './lib/pg.ts'
import { spawnProduct } from './lib/product.ts'
import { row, type ScenarioResult } from './lib/report.ts'
import { isMain, runAsMain } from './lib/scenario.ts'
import { scenarioResult, startScenario } from './lib/scenario-run.ts'
import { sleep } from './lib/stats.ts'
import { benchGenerator, emptyTally, tally } from './lib/traffic.ts'

// Memory over a long replay: `prompt-appview ingest` (its own process, postgres.js) reads
// a Jetstream-format replay through a named pipe that this process fills from the
// generator as fast as the indexer takes it, so neither side ever holds the whole replay.
// RSS is read from /proc at 25%, 50% and 100% of the events committed; the peak is the
// kernel's high-water mark (VmHWM).

export interface MemoryOptions extends BenchOptions {
  events: number
  dids: number
  /** Node flags for the indexer process: by default the ones the product ships with. */
  nodeFlags: string[]
  /** The generator's share of network noise: what a Letta-filtered Jetstream still sends. */
  noiseRatio: number
}

export function memoryOptionsFromEnv(): MemoryOptions {
  return {
    ...benchOptionsFromEnv('memory'),
    events: count('BENCH_MEMORY_EVENTS', 2_000_000),
    dids: count('BENCH_MEMORY_DIDS', 5000),
    nodeFlags: nodeFlagsFromEnv('BENCH_MEMORY_NODE_FLAGS'),
    noiseRatio: setting('BENCH_MEMORY_NOISE', 0.78),
  }
}

function hwmMbOf(pid: number): number {
  try {
    const s = execFileSync('cat', [`/proc/${pid}/status`]).toString()
    return Number(/VmHWM:\s+(\d+)\s+kB/.exec(s)?.[1]) / 1024
  } catch {
    return Number.NaN
  }
}

export async function runMemory(o: MemoryOptions): Promise<ScenarioResult> {
  const log = o.log ?? (() => {})
  const run = startScenario()
  const { rows, checks, details, t0 } = run
  const dir = mkdtempSync(join(tmpdir(), 'bench-memory-'))
  const fifo = join(dir, 'replay.ndjson')
  execFileSync('mkfifo', [fifo])
  const db = await createTempDatabase(o.serverUrl, 'bench_memory')
  await checkpoint(o.serverUrl)
  const product = await spawnProduct(
    ['ingest'],
    { DATABASE_URL: db.url, SOURCE: 'replay', REPLAY_FILE: fifo },
    o.nodeFlags,
  )
  const { child } = product
  const client = rawClient(db.url)
  let stopSampling = false
  let matchingShare = Number.NaN
  // The process's own view (prom-client's Node metrics): how much of the RSS is V8 heap.
  const heapOf = async () => {
    try {
      const text = await (await fetch(`${product.base}/metrics`)).text()
      const get = (name: string) =>
        Number(
          new RegExp(`^prompt_appview_${name}(?:\\{[^}]*\\})? ([0-9.e+]+)`, 'm').exec(text)?.[1],
        ) /
        2 ** 20
      return {
        heapUsedMb: get('nodejs_heap_size_used_bytes'),
        heapTotalMb: get('nodejs_heap_size_total_bytes'),
        externalMb: get('nodejs_external_memory_bytes'),
      }
    } catch {
      return null
    }
  }
  try {
    // The generator runs here, so the cut points are known only as the lines go out: the
    // time_us of every 5% of the replay, to place each RSS sample on the way.
    const STEPS = 20
    const stepAt = Array.from({ length: STEPS }, (_, k) =>
      Math.max(1, Math.round((o.events * (k + 1)) / STEPS)),
    )
    const stepUs: number[] = []
    const t = emptyTally()
    const gen = benchGenerator({ dids: o.dids, seed: 21, noiseRatio: o.noiseRatio })
    const out = createWriteStream(fifo)
    let writeError: Error | null = null
    let wakeOnError: (() => void) | null = null
    out.on('error', (err) => {
      writeError = err
      wakeOnError?.()
    })
    /** `step`: how many 5% steps were committed when the sample was taken. */
    const samples: Array<{ atS: number; rssMb: number; step: number }> = []
    const heaps: Record<string, unknown> = {}
    let cursor = 0
    const sampler = (async () => {
      while (!stopSampling) {
        const r = await client<
          { cursor: string }[]
        >`SELECT cursor FROM ingest_cursors WHERE source = 'replay'`.catch(() => [])
        cursor = r.length ? Number(r[0].cursor) : 0
        const rssMb = rssMbOf(child.pid)
        const atS = (performance.now() - t0) / 1000
        let step = 0
        while (step < stepUs.length && cursor >= stepUs[step]) step++
        const before = samples.at(-1)?.step ?? 0
        samples.push({ atS, rssMb, step })
        for (const q of [5, 10, 20]) {
          if (before < q && step >= q) {
            heaps[`${q * 5}%`] = await heapOf()
            log(`${q * 5}% committed at ${atS.toFixed(0)} s: RSS ${rssMb.toFixed(0)} MB`)
          }
        }
        await sleep(250)
      }
    })()
    const started = performance.now()
    for (let i = 0; i < o.events; ) {
      const ev = gen.next()
      const line = tally(t, ev)
      // A replay file holds what Jetstream sent for WANTED; other commits never reach it.
      if (line === null) continue
      i++
      if (i === stepAt[stepUs.length]) stepUs.push(ev.time_us)
      if (!out.write(`${line}\n`)) {
        await new Promise<void>((resolve) => {
          wakeOnError = resolve
          out.once('drain', resolve)
        })
      }
      if (writeError || child.proc.exitCode !== null) {
        throw new Error(`ingest stopped reading (${writeError}):\n${child.output.join('')}`)
      }
    }
    const last = stepUs[STEPS - 1]
    while ((samples.at(-1)?.step ?? 0) < STEPS) {
      if (child.proc.exitCode !== null) throw new Error(`ingest exited:\n${child.output.join('')}`)
      await sleep(100)
    }
    const elapsedS = (performance.now() - started) / 1000
    const peakMb = hwmMbOf(child.pid)
    stopSampling = true
    await sampler
    out.end()
    details.heapAt = heaps
    details.samples = samples.filter((_, i) => i % 4 === 0)
    details.traffic = t
    matchingShare = t.matching / t.sent
    details.elapsedS = elapsedS
    details.eventsPerS = o.events / elapsedS
    const [c] = await client<{ prompts: number; changes: number }[]>`SELECT
      (SELECT count(*)::int FROM prompts) AS prompts, (SELECT count(*)::int FROM changes) AS changes`
    details.rows = c
    checks.push({
      name: 'the whole replay was committed',
      ok: cursor >= last && c.prompts > 0,
      detail: `cursor ${cursor} of ${last}; ${c.prompts} prompt rows`,
    })
    // RSS saw-tooths with garbage collection: each figure is the highest sample over the
    // last 5% of the replay before the mark, so growth compares peaks with peaks.
    const windowMax = (step: number) => {
      const inWindow = samples.filter((x) => x.step === step - 1 || x.step === step)
      // A short replay can pass a whole window between two samples: take the next one.
      const pool =
        inWindow.length > 0 ? inWindow : samples.filter((x) => x.step >= step).slice(0, 1)
      return Math.max(...pool.map((x) => x.rssMb))
    }
    const r25 = { rssMb: windowMax(5) }
    const r50 = { rssMb: windowMax(10) }
    const r100 = { rssMb: windowMax(20) }
    const growth = (r100.rssMb - r25.rssMb) / r25.rssMb
    rows.push(
      row('RSS at 25%', r25.rssMb, 'MB', '(none)', null),
      row('RSS at 50%', r50.rssMb, 'MB', '(none)', null),
      row('RSS at 100%', r100.rssMb, 'MB', '(none)', null),
      row('growth 25% -> 100%', growth * 100, '%', '<= 10%', growth <= 0.1),
      row('peak RSS (VmHWM)', peakMb, 'MB', '< 300 MB', peakMb < 300),
      row('replay rate', o.events / elapsedS, 'ev/s', '(none)', null),
    )
  } finally {
    stopSampling = true
    await child.stop()
    await client.end()
    await db.drop()
    rmSync(dir, { recursive: true, force: true })
  }
  return scenarioResult(run, o, {
    scenario: 'memory',
    title: `Memory over a ${o.events.toLocaleString('en-US')}-event replay`,
    notes: [
      `node flags of the indexer: ${o.nodeFlags.length ? o.nodeFlags.join(' ') : 'none (V8 defaults)'}${o.nodeFlags.join(' ') === RUNTIME_NODE_FLAGS.join(' ') ? ' (what the product ships: npm scripts, Docker NODE_OPTIONS)' : ''}`,
      'RSS at N% is the highest of the samples (every 250 ms) taken while the last 5% before N% was committed, so garbage-collection saw-tooth does not decide the growth figure',
      `the replay is what a Letta-filtered Jetstream sends: ${Math.round(100 * matchingShare)}% commits of the three collections (records of a few KB to tens of KB), the rest other letta.* collections and account and identity events of DIDs that have no Letta records (generator noiseRatio ${o.noiseRatio})`,
      '`prompt-appview ingest` with SOURCE=replay and the default queue and batch bounds, Postgres through postgres.js; RSS is the whole process as the kernel counts it',
    ],
  })
}

if (isMain(import.meta.url)) await runAsMain(() => runMemory(memoryOptionsFromEnv()))
