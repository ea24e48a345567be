import { type ParseArgsOptionsConfig, parseArgs } from 'node:util'
import { ConfigError } from '../config/config.ts'
import { SETTINGS } from '../config/schema.ts'

// argv -> command, settings (every command's) and its own options, by node:util's parser.

/** The options each command owns, beside the settings every command takes. */
export const COMMAND_OPTIONS = {
  backfill: {
    did: { type: 'string', multiple: true },
    concurrency: { type: 'string' },
    reset: { type: 'boolean' },
  },
  export: { out: { type: 'string' }, format: { type: 'string' }, revisions: { type: 'boolean' } },
  demo: {
    rate: { type: 'string' },
    dids: { type: 'string' },
    events: { type: 'string' },
    wire: { type: 'string' },
    'jetstream-port': { type: 'string' },
  },
} as const satisfies Record<string, ParseArgsOptionsConfig>

/** What COMMAND_OPTIONS parses to: a string each, `did` repeatable, the flags as booleans. */
export type CommandOptions = ReturnType<typeof parseArgs<{ options: typeof OWN_OPTIONS }>>['values']

export interface CommandLine {
  command: string | null
  help: boolean
  /** Settings by flag name (`data-dir`), raw; the last occurrence wins. */
  settings: Record<string, string>
  /** The options of the command given (of any command with --help). */
  options: CommandOptions
  positionals: string[]
}

const SETTING_OPTIONS: ParseArgsOptionsConfig = Object.fromEntries(
  SETTINGS.map((s) => [s.flag, { type: 'string' as const }]),
)
const OWN_OPTIONS = {
  ...COMMAND_OPTIONS.backfill,
  ...COMMAND_OPTIONS.export,
  ...COMMAND_OPTIONS.demo,
}
const OWNER = new Map<string, string>(
  Object.entries(COMMAND_OPTIONS).flatMap(([command, opts]) =>
    Object.keys(opts).map((name) => [name, command]),
  ),
)

/** Throws ConfigError for an unknown option, a missing value, or another command's option. */
export function parseCommandLine(argv: string[]): CommandLine {
  let parsed: ReturnType<typeof parseArgs>
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        ...SETTING_OPTIONS,
        ...OWN_OPTIONS,
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
      strict: true,
    })
  } catch (err) {
    throw new ConfigError([(err as Error).message])
  }
  const [command = null, ...positionals] = parsed.positionals
  const line: CommandLine = {
    command,
    help: parsed.values.help === true,
    settings: {},
    options: {},
    positionals,
  }
  const wrongCommand: string[] = []
  for (const [name, value] of Object.entries(parsed.values)) {
    if (name === 'help' || value === undefined) continue
    const owner = OWNER.get(name)
    if (owner === undefined) line.settings[name] = value as string
    else if (owner === (command ?? 'run') || line.help)
      Object.assign(line.options, { [name]: value })
    else wrongCommand.push(`--${name}: an option of \`${owner}\`, not of \`${command ?? 'run'}\``)
  }
  if (wrongCommand.length > 0) throw new ConfigError(wrongCommand)
  return line
}
