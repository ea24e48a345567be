import { randomInt } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import { createShared } from './lib/baseline.ts'
import { keepLogsIn, liveProcesses } from './lib/cli-proc.ts'
import { scenarioContext, tearDownAll } from './lib/context.ts'
import type { Scenario } from './lib/scenario.ts'
import { allScenarios } from './scenarios/index.ts'

// `npm run chaos [-- --short] [-- --only name,name]`: faults injected from outside into
// the real CLI, each run compared with an uninterrupted run of the same events. The seed
// is printed; CHAOS_SEED=<seed> reproduces the same events and the same fault points;
// CHAOS_LOG_DIR=<dir> keeps the output of every product process there.

const args = process.argv.slice(2)
const short = args.includes('--short') || process.env.CHAOS_SHORT === '1'
const only = args
  .find((a) => a.startsWith('--only='))
  ?.slice(7)
  .split(',')
const seed = process.env.CHAOS_SEED ? Number(process.env.CHAOS_SEED) : randomInt(1, 2 ** 31)
if (!Number.isSafeInteger(seed)) {
  console.error(`CHAOS_SEED must be an integer, got ${process.env.CHAOS_SEED}`)
  process.exit(2)
}

async function main(): Promise<number> {
  const t0 = performance.now()
  const logDir = process.env.CHAOS_LOG_DIR
  if (logDir) {
    mkdirSync(logDir, { recursive: true })
    keepLogsIn(logDir)
  }
  const scenarios = allScenarios().filter((s) => (only ? only.includes(s.name) : !short || s.short))
  console.log(
    `chaos: seed ${seed} (reproduce: CHAOS_SEED=${seed} npm run chaos${short ? ' -- --short' : ''}), ${scenarios.length} scenarios${short ? ', short' : ''}`,
  )
  const suite = scenarioContext(seed, short, 'suite')
  const shared = createShared(seed, short, suite.ctx)
  const results: Array<{
    s: Scenario
    ok: boolean
    skipped: boolean
    figures: string
    s_: number
  }> = []
  for (const s of scenarios) results.push(await runOne(s, shared))
  const problems = await suite.teardown()
  const stray = liveProcesses()
  for (const p of stray) {
    problems.push(`stray product process ${p.pid} still running at the end: killed`)
    p.kill9()
  }
  console.log(`\nchaos summary (seed ${seed}, ${((performance.now() - t0) / 1000).toFixed(0)} s):`)
  for (const r of results)
    console.log(
      `  ${r.skipped ? 'SKIP' : r.ok ? 'PASS' : 'FAIL'} ${r.s.name.padEnd(28)} ${r.s_.toFixed(0).padStart(4)} s  ${r.figures}`,
    )
  for (const p of problems) console.log(`  TEARDOWN ${p}`)
  return results.every((r) => r.ok) && problems.length === 0 ? 0 : 1
}

async function runOne(s: Scenario, shared: ReturnType<typeof createShared>) {
  const t0 = performance.now()
  const run = scenarioContext(seed, short, s.name)
  console.log(`\n== ${s.name}: ${s.injects}`)
  let failures: string[]
  let figures: string
  let skipped = false
  try {
    const r = await s.run(run.ctx, shared)
    failures = r.failures
    figures = r.skipped ?? r.figures
    skipped = r.skipped !== undefined
  } catch (err) {
    failures = [`crashed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`]
    figures = 'error'
  }
  failures.push(...(await run.teardown()))
  for (const n of run.notes) console.log(`   injected/held: ${n}`)
  for (const f of failures) console.log(`   FAILED: ${f}`)
  const secs = (performance.now() - t0) / 1000
  console.log(`   ${skipped ? 'SKIP' : failures.length ? 'FAIL' : 'PASS'} in ${secs.toFixed(1)} s`)
  return { s, ok: failures.length === 0, skipped, figures, s_: secs }
}

// Interrupted: the same teardown (product processes, clusters, databases, temp dirs).
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.log(`\nchaos: ${signal}, tearing down`)
    for (const p of liveProcesses()) p.kill9()
    tearDownAll().then(
      (problems) => {
        for (const p of problems) console.log(`  TEARDOWN ${p}`)
        process.exit(130)
      },
      () => process.exit(130),
    )
  })
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err)
    process.exit(1)
  },
)
