import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { Scenario } from '../lib/scenario.ts'

// The hook for Jetstream v2 (issue 12, branch i12): the same cuts as jetstream-cuts, on
// the v2 wire. It runs once a v2 source exists in this tree; until then it reports SKIP,
// which the summary shows and which neither passes nor fails the run.

const V2_SOURCE = fileURLToPath(new URL('../../../src/ingest/jetstream-v2.ts', import.meta.url))

export const jetstreamV2Scenario: Scenario = {
  name: 'jetstream-v2-cuts',
  short: true,
  injects: 'local Jetstream v2 behind the cutting proxy (once the v2 source lands)',
  async run() {
    if (!existsSync(V2_SOURCE))
      return {
        failures: [],
        figures: '',
        skipped:
          'no Jetstream v2 source in this tree yet (issue 12): see scenarios/jetstream-cuts.ts for the hook',
      }
    return {
      failures: [
        'a v2 source exists now: wire its server into scenarios/jetstream-cuts.ts (the flavour hook) and drop this placeholder',
      ],
      figures: 'not wired',
    }
  },
}
