import pino from 'pino'
import { type Config, collectionsOf, loadConfig } from '../../src/config/config.ts'
import { type AppContext, createContext } from '../../src/context/context.ts'
import type { Database } from '../../src/db/client.ts'
import { createMetrics } from '../../src/observe/metrics.ts'

/** An AppContext over a test database: defaults, overridden by `env`, silent logs. */
export function testContext(db: Database, env: Record<string, string> = {}): AppContext {
  const config: Config = loadConfig({}, env)
  const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' })
  const metrics = createMetrics({ version: 'test', collections: collectionsOf(config) })
  return createContext({ config, logger, db, metrics })
}
