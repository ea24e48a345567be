import type { Logger } from 'pino'
import { type Config, nsidsOf } from '../config/config.ts'
import type { Database } from '../db/client.ts'
import type { Nsids } from '../model/nsids.ts'
import { PromptValidator } from '../model/prompt-record.ts'
import type { Metrics } from '../observe/metrics.ts'

/**
 * Everything a component needs, passed explicitly: no module singletons. The one
 * dependency bag of a process: the indexer takes a Pick of it (IndexerDeps), the API and
 * the sources take it whole. Built once (createContext), never changed afterwards.
 */
export interface AppContext {
  readonly config: Config
  readonly logger: Logger
  readonly db: Database
  readonly metrics: Metrics
  /** The three collections by role, as the configuration names them. */
  readonly nsids: Nsids
  /** The prompt lexicon, read and compiled once per process. */
  readonly validator: PromptValidator
}

/** Completes the bag from what was opened: the NSIDs and the validator follow the config. */
export function createContext(
  parts: Pick<AppContext, 'config' | 'logger' | 'db' | 'metrics'>,
): AppContext {
  return Object.freeze({
    ...parts,
    nsids: nsidsOf(parts.config),
    validator: new PromptValidator(parts.config.promptNsid),
  })
}
