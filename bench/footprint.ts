import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { REPO_ROOT } from './lib/child.ts'
import { benchEnv, count } from './lib/env.ts'
import { createTempDatabase } from './lib/pg.ts'
import { sampleTree } from './lib/proc-tree.ts'
import { row, type ScenarioResult } from './lib/report.ts'
import { isMain, runAsMain } from './lib/scenario.ts'
import { scenarioResult, startScenario } from './lib/scenario-run.ts'
import { sleep } from './lib/stats.ts'

// What a newcomer meets first (SPEC section 12): each command as the README shows it, its
// first answer timed from the process's start, and the memory of its whole process tree
// (npm, the shell, node) read from /proc for the whole run: the peak (VmHWM, summed over
// the tree) and the RSS at the end. The "before" figures are issue 29's, measured on this
// machine before the template, the smaller buffer pool and the lean entry.

export interface FootprintOptions {
  serverUrl: string
  /** How long each command runs (the issue: 10 minutes). */
  seconds: number
  /** How long the demo runs (the issue: 30 minutes). */
  demoSeconds: number
  log?: (msg: string) => void
}

export function footprintOptionsFromEnv(): FootprintOptions {
  return {
    serverUrl: benchEnv.serverUrl,
    seconds: count('BENCH_FOOTPRINT_SECONDS', 600),
    demoSeconds: count('BENCH_FOOTPRINT_DEMO_SECONDS', 1800),
    log: (m) => console.log(`[footprint] ${m}`),
  }
}

interface Measured {
  firstAnswerS: number | null
  hwmMb: number
  rssEndMb: number
  /** RSS at a quarter of the run and at its end: flat or not. */
  rssQuarterMb: number
  /** Cores used on average over the second half of the run. */
  cpuCores: number
  nodeHwmMb: number
  nodeRssEndMb: number
  exitCode: number | null
}

const isProduct = (comm: string) => comm === 'MainThread' || comm === 'node'

const LISTENING = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/

/** Runs `cmd` for `seconds`, probing `path` until it answers 200, sampling the tree each second. */
async function measure(
  cmd: string,
  args: string[],
  env: Record<string, string>,
  seconds: number,
  path = '/v1/stats',
): Promise<Measured> {
  const t0 = performance.now()
  const child: ChildProcess = spawn(cmd, args, {
    cwd: REPO_ROOT,
    env: { ...process.env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  const keep = (d: Buffer) => {
    out = (out + d.toString()).slice(-20_000)
  }
  child.stdout?.on('data', keep)
  child.stderr?.on('data', keep)
  const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)))
  let firstAnswerS: number | null = null
  let hwmMb = 0
  let nodeHwmMb = 0
  let rssQuarterMb = 0
  let last = sampleTree(child.pid!)
  let nodeRssEndMb = 0
  let half: { cpuS: number; at: number } | null = null
  const end = t0 + seconds * 1000
  while (performance.now() < end && child.exitCode === null) {
    const url = LISTENING.exec(out)?.[1]
    if (url && firstAnswerS === null) {
      const ok = await fetch(`${url}${path}`).then(
        (r) => r.ok,
        () => false,
      )
      if (ok) firstAnswerS = (performance.now() - t0) / 1000
    }
    last = sampleTree(child.pid!)
    hwmMb = Math.max(hwmMb, last.hwmMb)
    // The product's own process (npm is a node process too, but names itself).
    for (const proc of last.procs)
      if (proc.comm === 'node') nodeHwmMb = Math.max(nodeHwmMb, proc.hwmMb)
    const elapsed = performance.now() - t0
    nodeRssEndMb = last.procs.find((p) => isProduct(p.comm))?.rssMb ?? nodeRssEndMb
    if (!rssQuarterMb && elapsed >= seconds * 250) rssQuarterMb = last.rssMb
    if (!half && elapsed >= seconds * 500) half = { cpuS: last.cpuS, at: elapsed }
    await sleep(firstAnswerS === null ? 20 : 1000)
  }
  const cpuCores = half ? (last.cpuS - half.cpuS) / ((performance.now() - t0 - half.at) / 1000) : 0
  child.kill('SIGTERM')
  const exitCode = await exited
  return {
    firstAnswerS,
    hwmMb,
    rssEndMb: last.rssMb,
    rssQuarterMb,
    cpuCores,
    nodeHwmMb,
    nodeRssEndMb,
    exitCode,
  }
}

export async function runFootprint(o: FootprintOptions): Promise<ScenarioResult> {
  const log = o.log ?? (() => {})
  const run = startScenario()
  const { rows, details } = run
  const dir = mkdtempSync(join(tmpdir(), 'bench-footprint-'))
  const db = await createTempDatabase(o.serverUrl, 'footprint')
  try {
    log(`npm start, a fresh data directory, ${o.seconds} s`)
    const start = await measure('npm', ['start'], { DATA_DIR: join(dir, 'data') }, o.seconds)
    details.npmStart = start
    rows.push(
      row(
        'npm start: first answer',
        start.firstAnswerS ?? Number.NaN,
        's',
        '<= 2 s',
        (start.firstAnswerS ?? 99) <= 2,
        8,
      ),
      row(
        'npm start: peak RSS (VmHWM, tree)',
        start.hwmMb,
        'MB',
        '<= 250 MB',
        start.hwmMb <= 250,
        1117,
      ),
      row(
        'npm start: RSS at the end',
        start.rssEndMb,
        'MB',
        '<= 200 MB',
        start.rssEndMb <= 200,
        530,
      ),
    )
    log(JSON.stringify(start))

    const cli = ['node_modules/.bin/node', 'src/cli/main.ts']
    const migrate = spawn(cli[0], [cli[1], 'migrate'], {
      cwd: REPO_ROOT,
      env: { ...process.env, DATABASE_URL: db.url },
      stdio: 'ignore',
    })
    await new Promise((r) => migrate.once('exit', r))
    log(`serve on Postgres, idle, ${o.seconds} s`)
    const serve = await measure(cli[0], [cli[1], 'serve'], { DATABASE_URL: db.url }, o.seconds)
    details.serveIdle = serve
    rows.push(
      row(
        'serve idle: first answer',
        serve.firstAnswerS ?? Number.NaN,
        's',
        '<= 1 s',
        (serve.firstAnswerS ?? 99) <= 1,
        null,
      ),
      row('serve idle: peak RSS (VmHWM)', serve.hwmMb, 'MB', '<= 120 MB', serve.hwmMb <= 120, 327),
      row(
        'serve idle: RSS at the end',
        serve.rssEndMb,
        'MB',
        '<= 100 MB',
        serve.rssEndMb <= 100,
        312,
      ),
    )
    log(JSON.stringify(serve))

    log(`npm run demo, ${o.demoSeconds} s`)
    const demo = await measure('npm', ['run', 'demo'], {}, o.demoSeconds)
    details.demo = demo
    const flat = demo.rssEndMb <= demo.rssQuarterMb * 1.1
    rows.push(
      row(
        'demo: first answer',
        demo.firstAnswerS ?? Number.NaN,
        's',
        '<= 3 s',
        (demo.firstAnswerS ?? 99) <= 3,
        null,
      ),
      row('demo: peak RSS (VmHWM, tree)', demo.hwmMb, 'MB', '<= 350 MB', demo.hwmMb <= 350, 1074),
      row(
        'demo: RSS at the end vs a quarter in',
        demo.rssEndMb,
        'MB',
        'flat (within 10%)',
        flat,
        demo.rssQuarterMb,
      ),
    )
    log(JSON.stringify(demo))
  } finally {
    await db.drop()
    rmSync(dir, { recursive: true, force: true })
  }
  return scenarioResult(run, o, {
    scenario: 'footprint',
    title: 'Footprint of the commands as the README shows them',
    notes: [
      'Memory is the whole process tree from /proc (npm start and npm run demo are npm, sh and node); the baselines are issue 29 before the change (npm start 8 s, 1,117 MB peak, 530 MB after; serve 327/312 MB; demo 1,074 MB peak).',
      '`run` following a relay at 2,000 frames/s is not part of this scenario yet (see bench/README.md).',
    ],
  })
}

if (isMain(import.meta.url)) await runAsMain(() => runFootprint(footprintOptionsFromEnv()))
