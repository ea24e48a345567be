import type { Shared } from './baseline.ts'
import type { ChaosContext } from './context.ts'

export interface ScenarioResult {
  /** What failed to hold; empty when the scenario passed. */
  failures: string[]
  /** One line of figures for the summary. */
  figures: string
  /** Set when the scenario could not run here (and why); it neither passes nor fails. */
  skipped?: string
}

export interface Scenario {
  name: string
  /** One line: what is injected. */
  injects: string
  /** Part of the short run (`--short`, .ci/run). */
  short: boolean
  run(ctx: ChaosContext, shared: Shared): Promise<ScenarioResult>
}
