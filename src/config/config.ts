import { indexedCollections, type Nsids } from '../model/nsids.ts'
import type { Parse } from './parse.ts'
import { type Config, SETTINGS } from './schema.ts'

export type { Config } from './schema.ts'

export class ConfigError extends Error {
  readonly problems: string[]
  constructor(problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`)
    this.name = 'ConfigError'
    this.problems = problems
  }
}

/**
 * Layers flags over the environment over defaults. `flags` maps flag names (`data-dir`)
 * to raw strings. Throws one ConfigError naming every bad setting.
 */
export function loadConfig(
  flags: Record<string, string> = {},
  env: Record<string, string | undefined> = process.env,
): Config {
  const problems: string[] = []
  const out: Record<string, unknown> = {}
  const known = new Set<string>(SETTINGS.map((s) => s.flag))
  for (const f of Object.keys(flags)) if (!known.has(f)) problems.push(`--${f}: unknown option`)
  for (const s of SETTINGS) {
    const fromFlag = flags[s.flag]
    const raw = fromFlag ?? env[s.env]
    if (raw === undefined) {
      out[s.key] = s.default
      continue
    }
    try {
      out[s.key] = (s.parse as Parse<unknown>)(raw)
    } catch (err) {
      const where = fromFlag !== undefined ? `--${s.flag}` : s.env
      problems.push(`${where}=${JSON.stringify(raw)}: ${(err as Error).message}`)
    }
  }
  const config = out as unknown as Config
  if (problems.length === 0) problems.push(...crossChecks(config))
  if (problems.length > 0) throw new ConfigError(problems)
  return config
}

/**
 * Removed settings that a deployment's environment may still set. They would change nothing
 * now, so they are named in a warning rather than refused; their flags are unknown options.
 */
const RETIRED_SETTINGS = ['ANALYSIS_THREADS', 'VERIFY_THREADS']

export function retiredSettingsIn(env: Record<string, string | undefined> = process.env): string[] {
  return RETIRED_SETTINGS.filter((name) => env[name] !== undefined)
}

/** Settings that are valid alone but not together. */
function crossChecks(config: Config): string[] {
  const problems: string[] = []
  if (config.source === 'replay' && !config.replayFile)
    problems.push('SOURCE=replay needs REPLAY_FILE (or --replay-file)')
  if (new Set(collectionsOf(config)).size !== 3)
    problems.push('PROMPT_NSID, CONVERSATION_NSID and AGENT_NSID must differ')
  if (config.publicUrl && !config.serviceDid)
    problems.push('PUBLIC_URL is the endpoint of the SERVICE_DID service: set SERVICE_DID too')
  return problems
}

export function collectionsOf(config: Config): string[] {
  return indexedCollections(nsidsOf(config))
}

/** The three collections by role, as the indexer and the API name them. */
export function nsidsOf(config: Config): Nsids {
  return {
    prompt: config.promptNsid,
    conversation: config.conversationNsid,
    agent: config.agentNsid,
  }
}
