import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { machine } from './lib/env.ts'
import {
  markdownTable,
  RESULTS_DIR,
  readme,
  readResult,
  type ScenarioResult,
} from './lib/report.ts'

// `npm run bench`: every scenario in turn, each in its own process (a clean heap, and one
// scenario's leftovers never weigh on the next), then the table of all results, printed
// and written to bench/results/README.md. BENCH_ONLY=ingest,freshness runs a subset (the
// table keeps the other scenarios' latest results, with their own dates).

export const SCENARIOS = [
  'ingest',
  'firehose',
  'read-api',
  'freshness',
  'memory',
  'anatomy',
] as const

const only = process.env.BENCH_ONLY?.split(',')
  .map((s) => s.trim())
  .filter(Boolean)
const chosen = SCENARIOS.filter((s) => !only || only.includes(s))
const failed: string[] = []
const started = Date.now()

for (const scenario of chosen) {
  console.log(`\n=== ${scenario} ===`)
  const t = Date.now()
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn(
      process.execPath,
      [fileURLToPath(new URL(`./${scenario}.ts`, import.meta.url))],
      {
        stdio: 'inherit',
      },
    )
    child.on('exit', (c) => resolve(c))
  })
  console.log(
    `=== ${scenario}: ${code === 0 ? 'done' : `FAILED (exit ${code})`} in ${((Date.now() - t) / 1000).toFixed(0)} s`,
  )
  if (code !== 0) failed.push(scenario)
}

// A scenario that failed a correctness check still wrote its figures (the table marks it);
// one that crashed left only an older file, which must not pass for this run's. With
// BENCH_ONLY the table keeps the latest results of the other scenarios, each dated.
const runStart = new Date(started).toISOString()
const results = SCENARIOS.map((s) => readResult(s)).filter(
  (r, i): r is ScenarioResult =>
    r !== null && (!chosen.includes(SCENARIOS[i]) || r.startedAt >= runStart),
)
const command = `npm run bench${process.env.BENCH_SCALE ? ` (BENCH_SCALE=${process.env.BENCH_SCALE})` : ''}`
console.log(`\n${markdownTable(results)}\n`)
console.log(
  `nproc ${machine().nproc}; total ${((Date.now() - started) / 1000 / 60).toFixed(1)} min`,
)
if (results.length > 0) writeFileSync(`${RESULTS_DIR}README.md`, readme(results, command))
if (failed.length > 0) {
  console.error(`failed: ${failed.join(', ')}`)
  process.exitCode = 1
}
