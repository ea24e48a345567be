import { type JetstreamJson, startJetstreamServer } from '../demo-network/jetstream-server.ts'
import { startPlcStub } from '../test/helpers/firehose/plc-stub.ts'
import { nodeFlagsFromEnv } from '../test/helpers/node-child.ts'
import { createTempDatabase } from '../test/helpers/pg-cluster.ts'
import { type BenchOptions, benchOptionsFromEnv, count } from './lib/env.ts'
import { rawClient } from './lib/pg.ts'
import { type ProductProcess, productReady, spawnProduct, spawnRun } from './lib/product.ts'
import { type Row, row, type ScenarioResult } from './lib/report.ts'
import { type SoakFigures, soak } from './lib/rss-soak.ts'
import { isMain, runAsMain } from './lib/scenario.ts'
import { scenarioResult, startScenario } from './lib/scenario-run.ts'
import { liveGenerator } from './lib/traffic.ts'

// Memory over time, as an operator runs the product: `npm run demo` (its own local
// Jetstream, generator and PGlite), and `prompt-appview run` against a local Jetstream fed
// in real time, each for BENCH_SOAK_SECONDS (default 10 minutes), side by side. RSS is read
// from /proc every few seconds; the growth after warm-up is the figure (target <= 10%).

export interface SoakOptions extends BenchOptions {
  durationS: number
  warmupS: number
  /** Events per second the local Jetstream sends `run`. */
  rate: number
  /** The demo's --rate (its default, 500, unless set). */
  demoRate: number
  dids: number
  only: Array<'demo' | 'run'>
  nodeFlags: string[]
}

export function soakOptionsFromEnv(): SoakOptions {
  const durationS = count('BENCH_SOAK_SECONDS', 600)
  const only = (process.env.BENCH_SOAK_ONLY ?? 'demo,run').split(',').map((s) => s.trim())
  return {
    ...benchOptionsFromEnv('soak'),
    durationS,
    warmupS: count('BENCH_SOAK_WARMUP_SECONDS', Math.round(durationS * 0.2)),
    rate: count('BENCH_SOAK_RATE', 300),
    demoRate: count('BENCH_SOAK_DEMO_RATE', 500),
    dids: count('BENCH_SOAK_DIDS', 200),
    only: only.filter((s): s is 'demo' | 'run' => s === 'demo' || s === 'run'),
    nodeFlags: nodeFlagsFromEnv('BENCH_SOAK_NODE_FLAGS'),
  }
}

const EVERY_S = 5

function windowOf(o: SoakOptions): number {
  return Math.max(EVERY_S * 2, Math.round(o.durationS * 0.1))
}

/** Once the process is ready, samples its RSS for the whole run. */
async function soakProduct(
  p: ProductProcess,
  o: SoakOptions,
  label: string,
  readyTimeoutMs?: number,
): Promise<SoakFigures> {
  await productReady(p, readyTimeoutMs)
  return soak(p.child, {
    ...o,
    windowS: windowOf(o),
    everyS: EVERY_S,
    metricsUrl: `${p.base}/metrics`,
    log: o.log ?? (() => {}),
    label,
  })
}

async function soakDemo(o: SoakOptions): Promise<SoakFigures> {
  const p = await spawnProduct(
    ['demo', '--rate', String(o.demoRate)],
    { DATABASE_URL: '' },
    o.nodeFlags,
  )
  try {
    // PGlite's first start (initdb in the temp dir) and the migrations take a while here.
    return await soakProduct(p, o, 'demo', 180_000)
  } finally {
    await p.child.stop()
  }
}

async function soakRun(o: SoakOptions): Promise<SoakFigures & { committed: number }> {
  const db = await createTempDatabase(o.serverUrl, 'bench_soak')
  const plc = await startPlcStub({})
  // The feeding side is this process: its log is bounded too, but it is not what is measured.
  const jetstream = await startJetstreamServer({
    maxLogEvents: o.rate * 120,
    maxLogBytes: 64 << 20,
  })
  const gen = liveGenerator(o.dids, o.rate)
  let next = gen.next()
  const feeder = setInterval(() => {
    const now = Date.now() * 1000
    const batch: JetstreamJson[] = []
    while (next.time_us <= now) {
      batch.push(next as unknown as JetstreamJson)
      next = gen.next()
    }
    if (batch.length) jetstream.append(batch)
  }, 100)
  let p: ProductProcess | null = null
  try {
    p = await spawnRun(
      { databaseUrl: db.url, jetstreamUrl: jetstream.url, plcUrl: plc.url },
      o.nodeFlags,
    )
    const f = await soakProduct(p, o, 'run')
    const client = rawClient(db.url)
    const [c] = await client<{ n: number }[]>`SELECT count(*)::int AS n FROM prompts`
    await client.end()
    return { ...f, committed: c.n }
  } finally {
    clearInterval(feeder)
    await p?.child.stop()
    await jetstream.close()
    await plc.close()
    await db.drop()
  }
}

function rowsOf(label: string, f: SoakFigures, o: SoakOptions): Row[] {
  return [
    row(`${label}: RSS after warm-up`, f.afterWarmupMb, 'MB', '(none)', null),
    row(`${label}: RSS at the end`, f.endMb, 'MB', '(none)', null),
    row(`${label}: RSS growth`, f.growthPct, '%', '<= 10%', f.growthPct <= 10),
    row(`${label}: peak RSS`, f.peakMb, 'MB', '(none)', null),
    row(
      `${label}: peak V8 heap used`,
      f.peakHeapUsedMb ?? Number.NaN,
      'MB',
      `< ${o.nodeFlags.length ? 'the shipped 256 MB heap' : 'V8 default heap'}`,
      f.peakHeapUsedMb === null ? null : f.peakHeapUsedMb < 256,
    ),
  ]
}

export async function runSoak(o: SoakOptions): Promise<ScenarioResult> {
  const scenario = startScenario()
  const { rows, checks, details } = scenario
  const [demo, run] = await Promise.all([
    o.only.includes('demo') ? soakDemo(o) : null,
    o.only.includes('run') ? soakRun(o) : null,
  ])
  if (demo) {
    rows.push(...rowsOf('demo', demo, o))
    checks.push({ name: 'the demo ran the whole time', ok: true, detail: `${o.durationS} s` })
    details.demoSamples = demo.samples
  }
  if (run) {
    rows.push(...rowsOf('run', run, o))
    checks.push({
      name: '`run` ran the whole time and indexed',
      ok: run.committed > 0,
      detail: `${run.committed} prompt rows after ${o.durationS} s`,
    })
    details.runSamples = run.samples
  }
  return scenarioResult(scenario, o, {
    scenario: 'soak',
    title: `Memory over ${Math.round(o.durationS / 60)} min of demo and run`,
    notes: [
      `both run at the same time, each its own process with the node flags ${o.nodeFlags.join(' ') || '(V8 defaults)'}; the demo on its temp-dir PGlite at --rate ${o.demoRate} (its default --dids), \`run\` on Postgres (postgres.js) fed ${o.rate} ev/s in real time by a local Jetstream`,
      `RSS sampled every ${EVERY_S} s; growth compares the highest sample of the ${windowOf(o)} s after a ${o.warmupS} s warm-up with the highest of the last ${windowOf(o)} s`,
    ],
  })
}

if (isMain(import.meta.url)) await runAsMain(() => runSoak(soakOptionsFromEnv()))
