import { type JetstreamJson, startJetstreamServer } from '../src/demo/jetstream-server.ts'
import {
  CLI,
  freePort,
  type NodeChild,
  nodeFlagsFromEnv,
  spawnNode,
  waitForHttp,
} from './lib/child.ts'
import { benchEnv, count } from './lib/env.ts'
import { createTempDatabase, rawClient } from './lib/pg.ts'
import { startPlcStub } from './lib/plc-stub.ts'
import { type Check, type Row, row, type ScenarioResult } from './lib/report.ts'
import { type SoakFigures, soak } from './lib/rss-soak.ts'
import { isMain, machineInfo, runAsMain } from './lib/scenario.ts'
import { benchGenerator } from './lib/traffic.ts'

// Memory over time, as an operator runs the product: `npm run demo` (its own local
// Jetstream, generator and PGlite), and `prompt-appview run` against a local Jetstream fed
// in real time, each for BENCH_SOAK_SECONDS (default 10 minutes), side by side. RSS is read
// from /proc every few seconds; the growth after warm-up is the figure (target <= 10%).

export interface SoakOptions {
  serverUrl: string
  durationS: number
  warmupS: number
  /** Events per second the local Jetstream sends `run`. */
  rate: number
  /** The demo's --rate (its default, 500, unless set). */
  demoRate: number
  dids: number
  only: Array<'demo' | 'run'>
  nodeFlags: string[]
  log?: (msg: string) => void
}

export function soakOptionsFromEnv(): SoakOptions {
  const durationS = count('BENCH_SOAK_SECONDS', 600)
  const only = (process.env.BENCH_SOAK_ONLY ?? 'demo,run').split(',').map((s) => s.trim())
  return {
    serverUrl: benchEnv.serverUrl,
    durationS,
    warmupS: count('BENCH_SOAK_WARMUP_SECONDS', Math.round(durationS * 0.2)),
    rate: count('BENCH_SOAK_RATE', 300),
    demoRate: count('BENCH_SOAK_DEMO_RATE', 500),
    dids: count('BENCH_SOAK_DIDS', 200),
    only: only.filter((s): s is 'demo' | 'run' => s === 'demo' || s === 'run'),
    nodeFlags: nodeFlagsFromEnv('BENCH_SOAK_NODE_FLAGS'),
    log: (m) => console.log(`[soak] ${m}`),
  }
}

const EVERY_S = 5

function windowOf(o: SoakOptions): number {
  return Math.max(EVERY_S * 2, Math.round(o.durationS * 0.1))
}

async function soakDemo(o: SoakOptions): Promise<SoakFigures> {
  const port = await freePort()
  const child = spawnNode(
    [CLI, 'demo', '--rate', String(o.demoRate)],
    { HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', DATABASE_URL: '' },
    { execArgv: o.nodeFlags },
  )
  try {
    // PGlite's first start (initdb in the temp dir) and the migrations take a while here.
    await waitForHttp(`http://127.0.0.1:${port}/readyz`, child, 180_000)
    return await soak(child, {
      ...o,
      windowS: windowOf(o),
      everyS: EVERY_S,
      metricsUrl: `http://127.0.0.1:${port}/metrics`,
      log: o.log ?? (() => {}),
      label: 'demo',
    })
  } finally {
    await child.stop()
  }
}

async function soakRun(o: SoakOptions): Promise<SoakFigures & { committed: number }> {
  const db = await createTempDatabase(o.serverUrl, 'soak')
  const plc = await startPlcStub({})
  // The feeding side is this process: its log is bounded too, but it is not what is measured.
  const jetstream = await startJetstreamServer({
    maxLogEvents: o.rate * 120,
    maxLogBytes: 64 << 20,
  })
  const gen = benchGenerator({
    dids: o.dids,
    seed: 31,
    startTimeUs: Date.now() * 1000,
    meanIntervalUs: Math.round(1e6 / o.rate),
  })
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
  const port = await freePort()
  let child: NodeChild | null = null
  try {
    child = spawnNode(
      [CLI, 'run'],
      {
        DATABASE_URL: db.url,
        JETSTREAM_URL: jetstream.url,
        PLC_URL: plc.url,
        HOST: '127.0.0.1',
        PORT: String(port),
        LOG_LEVEL: 'warn',
      },
      { execArgv: o.nodeFlags },
    )
    await waitForHttp(`http://127.0.0.1:${port}/readyz`, child)
    const f = await soak(child, {
      ...o,
      windowS: windowOf(o),
      everyS: EVERY_S,
      metricsUrl: `http://127.0.0.1:${port}/metrics`,
      log: o.log ?? (() => {}),
      label: 'run',
    })
    const client = rawClient(db.url)
    const [c] = await client<{ n: number }[]>`SELECT count(*)::int AS n FROM prompts`
    await client.end()
    return { ...f, committed: c.n }
  } finally {
    clearInterval(feeder)
    await child?.stop()
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
  const startedAt = new Date().toISOString()
  const t0 = performance.now()
  const rows: Row[] = []
  const checks: Check[] = []
  const details: Record<string, unknown> = {}
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
  return {
    scenario: 'soak',
    title: `Memory over ${Math.round(o.durationS / 60)} min of demo and run`,
    startedAt,
    durationS: (performance.now() - t0) / 1000,
    machine: await machineInfo(o.serverUrl),
    params: { ...o, log: undefined, contentBytes: benchEnv.contentBytes },
    rows,
    checks,
    details,
    notes: [
      `both run at the same time, each its own process with the node flags ${o.nodeFlags.join(' ') || '(V8 defaults)'}; the demo on its temp-dir PGlite at --rate ${o.demoRate} (its default --dids), \`run\` on Postgres (postgres.js) fed ${o.rate} ev/s in real time by a local Jetstream`,
      `RSS sampled every ${EVERY_S} s; growth compares the highest sample of the ${windowOf(o)} s after a ${o.warmupS} s warm-up with the highest of the last ${windowOf(o)} s`,
    ],
  }
}

if (isMain(import.meta.url)) await runAsMain(() => runSoak(soakOptionsFromEnv()))
