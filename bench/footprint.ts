import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { nodeFlagsFromEnv, REPO_ROOT } from '../test/helpers/node-child.ts'
import { createTempDatabase } from '../test/helpers/pg-cluster.ts'
import { benchEnv, count } from './lib/env.ts'
import { measureFollowing } from './lib/following.ts'
import { sampleTree } from './lib/proc-tree.ts'
import { type Row, row, type ScenarioResult } from './lib/report.ts'
import { isMain, runAsMain } from './lib/scenario.ts'
import { type ScenarioRun, scenarioResult, startScenario } from './lib/scenario-run.ts'
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
  /** How long `run` follows the relay, after its warm-up (0: not at all). */
  followSeconds: number
  /** The relay's frames per second (the network's: 2,000). */
  followRate: number
  /** BENCH_FOOTPRINT_PROFILE: a directory for a CPU profile of `run` following the relay. */
  profileDir: string | null
  log?: (msg: string) => void
}

export function footprintOptionsFromEnv(): FootprintOptions {
  return {
    serverUrl: benchEnv.serverUrl,
    seconds: count('BENCH_FOOTPRINT_SECONDS', 600),
    demoSeconds: count('BENCH_FOOTPRINT_DEMO_SECONDS', 1800),
    followSeconds: count('BENCH_FOOTPRINT_FOLLOW_SECONDS', 600, 0),
    followRate: count('BENCH_FOOTPRINT_FOLLOW_RATE', 2000),
    profileDir: process.env.BENCH_FOOTPRINT_PROFILE || null,
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
  exitCode: number | null
}

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
    // Its own process group: the end signals the whole tree. npm does not pass SIGTERM on
    // to the node it started, which then ran on through the next command's measurement.
    detached: true,
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
  let rssQuarterMb = 0
  let last = sampleTree(child.pid!)
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
    const elapsed = performance.now() - t0
    if (!rssQuarterMb && elapsed >= seconds * 250) rssQuarterMb = last.rssMb
    if (!half && elapsed >= seconds * 500) half = { cpuS: last.cpuS, at: elapsed }
    await sleep(firstAnswerS === null ? 20 : 1000)
  }
  const cpuCores = half ? (last.cpuS - half.cpuS) / ((performance.now() - t0 - half.at) / 1000) : 0
  process.kill(-child.pid!, 'SIGTERM')
  const exitCode = await exited
  // The tree's last processes (npm's node) exit after npm; none may outlive the row.
  for (let i = 0; i < 100 && groupAlive(child.pid!); i++) await sleep(100)
  return {
    firstAnswerS,
    hwmMb,
    rssEndMb: last.rssMb,
    rssQuarterMb,
    cpuCores,
    exitCode,
  }
}

/** Whether any process of group `pgid` is alive. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0)
    return true
  } catch {
    return false
  }
}

/** The targets of SPEC section 12 for one command, and issue 29's figures before. */
interface Targets {
  firstS: number
  hwmMb: number
  /** RSS at the end, or 'flat': within 10% of the RSS a quarter into the run. */
  rssMb: number | 'flat'
  before: { firstS: number | null; hwmMb: number; rssMb: number | null }
}

function rowsOf(name: string, m: Measured, t: Targets): Row[] {
  const first = m.firstAnswerS ?? Number.NaN
  const flat = m.rssEndMb <= m.rssQuarterMb * 1.1
  return [
    row(
      `${name}: first answer`,
      first,
      's',
      `<= ${t.firstS} s`,
      first <= t.firstS,
      t.before.firstS,
    ),
    row(
      `${name}: peak RSS (VmHWM, tree)`,
      m.hwmMb,
      'MB',
      `<= ${t.hwmMb} MB`,
      m.hwmMb <= t.hwmMb,
      t.before.hwmMb,
    ),
    t.rssMb === 'flat'
      ? row(
          `${name}: RSS at the end vs a quarter in`,
          m.rssEndMb,
          'MB',
          'flat (within 10%)',
          flat,
          m.rssQuarterMb,
        )
      : row(
          `${name}: RSS at the end`,
          m.rssEndMb,
          'MB',
          `<= ${t.rssMb} MB`,
          m.rssEndMb <= t.rssMb,
          t.before.rssMb,
        ),
  ]
}

export async function runFootprint(o: FootprintOptions): Promise<ScenarioResult> {
  const log = o.log ?? (() => {})
  const run = startScenario()
  const { rows, details } = run
  const dir = mkdtempSync(join(tmpdir(), 'bench-footprint-'))
  const db = await createTempDatabase(o.serverUrl, 'bench_footprint')
  const cli = ['node_modules/.bin/node', 'src/cli/main.ts']
  const commands: Array<{
    key: string
    name: string
    argv: string[]
    env: Record<string, string>
    seconds: number
    t: Targets
  }> = [
    {
      key: 'npmStart',
      name: 'npm start',
      argv: ['npm', 'start'],
      env: { DATA_DIR: join(dir, 'data') },
      seconds: o.seconds,
      t: { firstS: 2, hwmMb: 250, rssMb: 200, before: { firstS: 8, hwmMb: 1117, rssMb: 530 } },
    },
    {
      key: 'serveIdle',
      name: 'serve idle',
      argv: [...cli, 'serve'],
      env: { DATABASE_URL: db.url },
      seconds: o.seconds,
      t: { firstS: 1, hwmMb: 120, rssMb: 100, before: { firstS: null, hwmMb: 327, rssMb: 312 } },
    },
    {
      key: 'demo',
      name: 'demo',
      argv: ['npm', 'run', 'demo'],
      env: {},
      seconds: o.demoSeconds,
      t: {
        firstS: 3,
        hwmMb: 350,
        rssMb: 'flat',
        before: { firstS: null, hwmMb: 1074, rssMb: null },
      },
    },
  ]
  try {
    // serve never migrates: the database it reads is migrated first, untimed.
    const migrate = spawn(cli[0], [cli[1], 'migrate'], {
      cwd: REPO_ROOT,
      env: { ...process.env, DATABASE_URL: db.url },
      stdio: 'ignore',
    })
    await new Promise((r) => migrate.once('exit', r))
    for (const c of commands) {
      log(`${c.name}, ${c.seconds} s`)
      const m = await measure(c.argv[0], c.argv.slice(1), c.env, c.seconds)
      details[c.key] = m
      rows.push(...rowsOf(c.name, m, c.t))
      log(JSON.stringify(m))
    }
    if (o.followSeconds > 0) await following(o, run, log)
  } finally {
    await db.drop()
    rmSync(dir, { recursive: true, force: true })
  }
  return scenarioResult(run, o, {
    scenario: 'footprint',
    title: 'Footprint of the commands as the README shows them',
    notes: [
      'Memory is the whole process tree from /proc (npm start and npm run demo are npm, sh and node); the baselines are issue 29 before the change (npm start 8 s, 1,117 MB peak, 530 MB after; serve 327/312 MB; demo 1,074 MB peak).',
      `\`run\` on Postgres follows a loopback relay at ${o.followRate} frames/s (${o.followSeconds} s after a ${FOLLOW_WARMUP_S} s warm-up): 4% Letta writes signed and chained as they are sent, the rest other collections' commits by 2,000 repos; Letta writes are timed until the change feed shows them, polled every ${FOLLOW_POLL_MS} ms.`,
    ],
  })
}

const FOLLOW_WARMUP_S = 30
const FOLLOW_POLL_MS = 100

/** `run` following the relay: its rows and the check that every Letta write showed. */
async function following(o: FootprintOptions, run: ScenarioRun, log: (m: string) => void) {
  const db = await createTempDatabase(o.serverUrl, 'bench_following')
  try {
    log(`run following a relay at ${o.followRate} frames/s, ${o.followSeconds} s`)
    const f = await measureFollowing({
      databaseUrl: db.url,
      rate: o.followRate,
      seconds: o.followSeconds,
      warmupS: FOLLOW_WARMUP_S,
      pollMs: FOLLOW_POLL_MS,
      profileDir: o.profileDir,
      nodeFlags: nodeFlagsFromEnv('BENCH_NODE_FLAGS'),
      log,
    })
    run.details.following = f
    log(JSON.stringify(f))
    const name = `run following ${o.followRate} frames/s`
    const flat = f.rssEndMb <= f.rssQuarterMb * 1.1
    run.rows.push(
      row(`${name}: frames/s sent`, f.framesPerS, 'frames/s', `${o.followRate}`, null),
      row(`${name}: CPU`, f.cpuCores, 'cores', '<= 0.5 core', f.cpuCores <= 0.5),
      row(`${name}: peak RSS (VmHWM)`, f.hwmMb, 'MB', '<= 300 MB', f.hwmMb <= 300),
      row(`${name}: RSS at the end`, f.rssEndMb, 'MB', '<= 250 MB', f.rssEndMb <= 250),
      row(
        `${name}: RSS at the end vs a quarter in`,
        f.rssEndMb,
        'MB',
        'flat (within 10%)',
        flat,
        f.rssQuarterMb,
      ),
      row(
        `${name}: Letta write -> feed p99`,
        f.latencyMs.p99,
        'ms',
        '<= 500 ms',
        f.latencyMs.p99 <= 500,
      ),
      row(`${name}: Letta write -> feed p50`, f.latencyMs.p50, 'ms', '(none)', null),
    )
    run.checks.push({
      name: 'following: every Letta write sent shows in the feed (or a later write of its record)',
      ok: f.unobserved === 0 && f.latencyMs.n > 0,
      detail: `${f.lettaSent} Letta writes sent, ${f.latencyMs.n} timed, ${f.unobserved} never shown ${JSON.stringify(f.missing)}`,
    })
  } finally {
    await db.drop()
  }
}

if (isMain(import.meta.url)) await runAsMain(() => runFootprint(footprintOptionsFromEnv()))
