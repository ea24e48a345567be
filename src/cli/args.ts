// argv → command, settings flags (for the config schema) and command options.
// `--name value`, `--name=value`; repeatable options collect into lists.

export interface ParsedArgs {
  command: string | null
  help: boolean
  /** Every `--flag value` pair; the last occurrence wins. */
  flags: Record<string, string>
  /** Every value of every flag, in order, for repeatable options such as `--did`. */
  lists: Record<string, string[]>
  positionals: string[]
}

const BOOLEAN_FLAGS = new Set(['help', 'h', 'reset', 'revisions'])

export function parseArgs(argv: string[]): ParsedArgs {
  const out: ParsedArgs = { command: null, help: false, flags: {}, lists: {}, positionals: [] }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    if (arg === '--') {
      out.positionals.push(...argv.slice(i + 1))
      break
    }
    if (arg.startsWith('-')) {
      const { key, value, used } = readFlag(arg.replace(/^--?/, ''), argv[i + 1])
      i += used
      if (key === 'help' || key === 'h') {
        out.help = true
        continue
      }
      out.flags[key] = value
      out.lists[key] = [...(out.lists[key] ?? []), value]
    } else if (out.command === null) {
      out.command = arg
    } else {
      out.positionals.push(arg)
    }
  }
  return out
}

/** `name=value`, a boolean `name`, or `name` taking the next argument (`used`: 1). */
function readFlag(
  name: string,
  next: string | undefined,
): { key: string; value: string; used: number } {
  const eq = name.indexOf('=')
  if (eq >= 0) return { key: name.slice(0, eq), value: name.slice(eq + 1), used: 0 }
  if (BOOLEAN_FLAGS.has(name)) return { key: name, value: 'true', used: 0 }
  return { key: name, value: next ?? '', used: 1 }
}

/** Splits off the options a command owns, leaving settings for the config schema. */
export function takeOptions(args: ParsedArgs, names: string[]): Record<string, string[]> {
  const taken: Record<string, string[]> = {}
  for (const n of names) {
    if (args.lists[n]) taken[n] = args.lists[n]
    delete args.flags[n]
    delete args.lists[n]
  }
  return taken
}
