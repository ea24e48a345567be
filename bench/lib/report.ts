import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { machine } from './env.ts'

// What every scenario hands back, how it is stored (bench/results/<scenario>.json) and how
// the results become the markdown table of bench/results/README.md.

export const RESULTS_DIR = fileURLToPath(new URL('../results/', import.meta.url))

/** One line of the table: a measured value, its same-run baseline if any, and the target. */
export interface Row {
  measure: string
  value: number
  unit: string
  baseline?: number | null
  /** value / baseline, when there is a baseline */
  ratio?: number | null
  target: string
  /** null: informational, no target */
  met: boolean | null
}

export interface Check {
  name: string
  ok: boolean
  detail?: string
}

export interface ScenarioResult {
  scenario: string
  title: string
  startedAt: string
  durationS: number
  machine: ReturnType<typeof machine> & Record<string, unknown>
  params: Record<string, unknown>
  rows: Row[]
  /** Correctness checks; a failed one makes the scenario fail. */
  checks: Check[]
  details: Record<string, unknown>
  notes: string[]
}

export function row(
  measure: string,
  value: number,
  unit: string,
  target: string,
  met: boolean | null,
  baseline?: number | null,
): Row {
  const ratio = baseline ? value / baseline : null
  return { measure, value, unit, baseline: baseline ?? null, ratio, target, met }
}

export function writeResult(result: ScenarioResult): string {
  mkdirSync(RESULTS_DIR, { recursive: true })
  const path = `${RESULTS_DIR}${result.scenario}.json`
  writeFileSync(path, `${JSON.stringify(result, null, 2)}\n`)
  return path
}

export function readResult(scenario: string): ScenarioResult | null {
  try {
    return JSON.parse(readFileSync(`${RESULTS_DIR}${scenario}.json`, 'utf8')) as ScenarioResult
  } catch {
    return null
  }
}

const fmt = (n: number | null | undefined): string => {
  if (n === null || n === undefined || Number.isNaN(n)) return '–'
  const abs = Math.abs(n)
  if (abs >= 1000) return Math.round(n).toLocaleString('en-US')
  if (abs >= 100) return n.toFixed(0)
  if (abs >= 10) return n.toFixed(1)
  return n.toFixed(2)
}

const mark = (met: boolean | null) => (met === null ? '' : met ? 'met' : '**missed**')

export function markdownTable(results: ScenarioResult[]): string {
  const lines = [
    '| scenario | measure | result | baseline (same run) | ratio | target | |',
    '|---|---|---|---|---|---|---|',
  ]
  for (const r of results) {
    const failed = r.checks.filter((c) => !c.ok)
    for (const [i, x] of r.rows.entries()) {
      const name = i === 0 ? r.title : ''
      const ratio = x.ratio ? `${fmt(x.ratio)}x` : '–'
      lines.push(
        `| ${name} | ${x.measure} | ${fmt(x.value)} ${x.unit} | ${x.baseline ? `${fmt(x.baseline)} ${x.unit}` : '–'} | ${ratio} | ${x.target} | ${mark(x.met)} |`,
      )
    }
    if (failed.length > 0) {
      lines.push(
        `| ${r.rows.length ? '' : r.title} | correctness | **FAILED**: ${failed.map((c) => c.name).join('; ')} | | | | |`,
      )
    }
  }
  return lines.join('\n')
}

const gitLabel = (g: { head: string; dirtyFiles: number }) =>
  `commit ${g.head}${g.dirtyFiles ? ` with ${g.dirtyFiles} tracked files changed on top` : ''}`

export function readme(results: ScenarioResult[], command: string): string {
  const m = results[0]?.machine
  const notes = results.flatMap((r) => r.notes.map((n) => `- ${r.title}: ${n}`))
  const runs = results.map((r) => {
    const git = r.machine?.git as { head: string; dirtyFiles: number } | undefined
    return `- ${r.title}: started ${r.startedAt}${git ? `, ${gitLabel(git)}` : ''}`
  })
  return [
    '# Benchmark results',
    '',
    `Latest \`${command}\` of each scenario, on ${m?.nproc ?? '?'} cores (\`nproc\`), Node ${m?.node ?? '?'}` +
      (m?.postgres ? `, Postgres ${(m.postgres as Record<string, string>).server_version}` : '') +
      '. Every baseline ran in the same run as its scenario, on the same machine; compare ratios, since absolute figures drift between runs of a shared machine. Raw figures: the JSON files beside this one.',
    '',
    ...runs,
    '',
    markdownTable(results),
    '',
    ...(notes.length ? ['Notes:', '', ...notes, ''] : []),
    'How to run, the knobs and what each scenario does: [bench/README.md](../README.md).',
    '',
  ].join('\n')
}
