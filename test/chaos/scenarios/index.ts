import type { Scenario } from '../lib/scenario.ts'
import { batchingScenario } from './batching.ts'
import { clockJumpScenario } from './clock-jump.ts'
import { diskFullScenario } from './disk-full.ts'
import { diskFullPostgresScenario } from './disk-full-postgres.ts'
import { firehoseCutsScenario } from './firehose-cuts.ts'
import { hostileReplayScenario } from './hostile-replay.ts'
import { httpFuzzScenario } from './http-fuzz.ts'
import { jetstreamCutsScenario } from './jetstream-cuts.ts'
import { kill9Scenario } from './kill9.ts'
import { pgOutageScenario } from './pg-outage.ts'
import { slowDbScenario } from './slow-db.ts'

export function allScenarios(): Scenario[] {
  return [
    batchingScenario('pglite'),
    batchingScenario('postgres'),
    kill9Scenario('pglite'),
    kill9Scenario('postgres'),
    pgOutageScenario,
    diskFullScenario,
    diskFullPostgresScenario,
    slowDbScenario,
    clockJumpScenario,
    hostileReplayScenario('pglite'),
    hostileReplayScenario('postgres'),
    jetstreamCutsScenario('pglite'),
    jetstreamCutsScenario('postgres'),
    jetstreamCutsScenario('pglite', 'v2'),
    jetstreamCutsScenario('postgres', 'v2'),
    firehoseCutsScenario('pglite'),
    firehoseCutsScenario('postgres'),
    httpFuzzScenario('pglite'),
    httpFuzzScenario('postgres'),
  ]
}
