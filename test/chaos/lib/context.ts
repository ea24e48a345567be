import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createRandom, type Random } from '../../../demo-network/random.ts'

// What every scenario gets: its own seeded random stream (derived from the run's seed and
// the scenario's name, so adding a scenario does not shift the others' fault points), a
// place for temporary files, and a teardown list that runs even when the scenario fails.

export interface ChaosContext {
  seed: number
  short: boolean
  rand: Random
  /** Lines of "what was injected / what held" for the report. */
  note(line: string): void
  /** Registers a teardown step; they run in reverse order. */
  defer(what: string, fn: () => Promise<void> | void): void
  tempDir(prefix: string): string
}

export interface ScenarioRun {
  ctx: ChaosContext
  notes: string[]
  teardown(): Promise<string[]>
}

export function subSeed(seed: number, name: string): number {
  let h = seed >>> 0
  for (const ch of name) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0
  return h
}

const active = new Set<ScenarioRun>()

/** Teardown of every run still open (the runner's answer to SIGINT / SIGTERM). */
export async function tearDownAll(): Promise<string[]> {
  const problems: string[] = []
  for (const run of [...active].reverse()) problems.push(...(await run.teardown()))
  return problems
}

export function scenarioContext(seed: number, short: boolean, name: string): ScenarioRun {
  const notes: string[] = []
  const steps: Array<{ what: string; fn: () => Promise<void> | void }> = []
  const dirs: string[] = []
  const ctx: ChaosContext = {
    seed,
    short,
    rand: createRandom(subSeed(seed, name)),
    note: (line) => {
      notes.push(line)
    },
    defer: (what, fn) => {
      steps.push({ what, fn })
    },
    tempDir: (prefix) => {
      const dir = mkdtempSync(join(tmpdir(), `chaos-${prefix}-`))
      dirs.push(dir)
      steps.push({ what: `remove ${dir}`, fn: () => rmSync(dir, { recursive: true, force: true }) })
      return dir
    },
  }
  const run: ScenarioRun = {
    ctx,
    notes,
    async teardown() {
      active.delete(run)
      const problems: string[] = []
      for (const step of steps.reverse()) {
        try {
          await step.fn()
        } catch (err) {
          problems.push(`teardown "${step.what}" failed: ${String(err)}`)
        }
      }
      steps.length = 0
      for (const d of dirs) if (existsSync(d)) problems.push(`temp dir ${d} left behind`)
      return problems
    },
  }
  active.add(run)
  return run
}
