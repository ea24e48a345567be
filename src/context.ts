import type { Logger } from 'pino'
import type { Config } from './config.ts'
import type { Database } from './db/client.ts'
import type { Metrics } from './metrics.ts'

/** Everything a component needs, passed explicitly: no module singletons. */
export interface AppContext {
  config: Config
  logger: Logger
  db: Database
  metrics: Metrics
}
