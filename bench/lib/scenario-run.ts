import { benchEnv } from './env.ts'
import type { Check, Row, ScenarioResult } from './report.ts'
import { machineInfo } from './scenario.ts'

// What every scenario does around its measurement: note when it started, gather rows,
// checks and details as it goes, and hand them back in one ScenarioResult with the machine
// and the parameters it ran with. One place, so every result file has the same shape.

export interface ScenarioRun {
  startedAt: string
  /** performance.now() at the start, for durationS. */
  t0: number
  rows: Row[]
  checks: Check[]
  details: Record<string, unknown>
}

export function startScenario(details: Record<string, unknown> = {}): ScenarioRun {
  return {
    startedAt: new Date().toISOString(),
    t0: performance.now(),
    rows: [],
    checks: [],
    details,
  }
}

export interface ScenarioHead {
  scenario: string
  title: string
  notes: string[]
  /** What the result stores as its parameters; by default the options without the logger. */
  params?: Record<string, unknown>
}

/** The options as stored by default: without the logger, with the record sizes. */
function paramsOf(o: object): Record<string, unknown> {
  return { ...o, log: undefined, contentBytes: benchEnv.contentBytes }
}

/** `o.serverUrl`: the Postgres server whose version the result names (null: none used). */
export async function scenarioResult(
  run: ScenarioRun,
  o: { serverUrl: string | null },
  head: ScenarioHead,
): Promise<ScenarioResult> {
  // Timed before the machine is probed, as the scenarios always did.
  const durationS = (performance.now() - run.t0) / 1000
  return {
    scenario: head.scenario,
    title: head.title,
    startedAt: run.startedAt,
    durationS,
    machine: await machineInfo(o.serverUrl),
    params: head.params ?? paramsOf(o),
    rows: run.rows,
    checks: run.checks,
    details: run.details,
    notes: head.notes,
  }
}
