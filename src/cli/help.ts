import { SETTINGS } from '../config/schema.ts'

/**
 * The demo's default events per second: one the embedded indexer follows live on two cores
 * (at 500 it ran 5-10 s behind, its queue full: bench/README.md, "Footprint").
 */
export const DEMO_RATE = 100

const COMMANDS: Record<string, { summary: string; usage: string; options?: string }> = {
  run: {
    summary: 'migrate, ingest and serve the API in one process (the default)',
    usage: 'prompt-appview run [settings]',
  },
  ingest: {
    summary: 'migrate and ingest; serves only /healthz, /readyz and /metrics',
    usage: 'prompt-appview ingest [settings]',
  },
  serve: {
    summary:
      'serve the read API from an existing database (read replicas; needs DATABASE_URL to share it)',
    usage: 'prompt-appview serve [settings]',
  },
  backfill: {
    summary: 'fetch whole repos (getRepo), verify and index them; resumable',
    usage: 'prompt-appview backfill [--did DID ...] [--concurrency N] [--reset] [settings]',
    options:
      '  --did DID          backfill these repos (repeatable); default: list repos on RELAY_URL\n' +
      '  --concurrency N    repos fetched at once (default 4)\n' +
      '  --reset            forget which repos were finished and start over',
  },
  export: {
    summary: 'write one consistent snapshot of the visible state (Parquet or NDJSON) and exit',
    usage: 'prompt-appview export --out DIR [--format parquet|ndjson] [--revisions] [settings]',
    options:
      '  --out DIR          the directory to write into (created if missing)\n' +
      '  --format F         parquet (default) or ndjson\n' +
      '  --revisions        also write every revision of the visible prompts, with its texts\n' +
      '  Files: prompts, conversations, agents[, revisions] and manifest.json (last), whose\n' +
      '  "seq" is the change-feed seq to follow with /v1/changes?since=<seq>',
  },
  migrate: {
    summary: 'apply database migrations and exit',
    usage: 'prompt-appview migrate [settings]',
  },
  demo: {
    summary: 'a simulated local network (Jetstream) feeding the indexer, with the API on PORT',
    usage: 'prompt-appview demo [--rate N] [--dids N] [--events N] [--wire v1|v2] [settings]',
    options:
      `  --rate N     events per second from the simulated network (default ${DEMO_RATE})\n` +
      '  --dids N     repos in the simulation (default 50)\n' +
      '  --events N   stop the simulation after N events (default: unbounded)\n' +
      '  --wire W     the Jetstream wire: v1 /subscribe (default) or v2 subscribeEvents with dictionary zstd',
  },
}

export function helpText(command: string | null): string {
  const settings = SETTINGS.map(
    (s) =>
      `  --${s.flag.padEnd(26)} ${s.env.padEnd(26)} ${s.help}${s.default !== null ? ` (default ${JSON.stringify(s.default)})` : ''}`,
  ).join('\n')
  if (command && COMMANDS[command]) {
    const c = COMMANDS[command]
    return `${c.usage}\n\n${c.summary}\n${c.options ? `\nOptions:\n${c.options}\n` : ''}\nSettings (flag, environment variable; flags win over the environment):\n${settings}\n`
  }
  const list = Object.entries(COMMANDS)
    .map(([name, c]) => `  ${name.padEnd(10)} ${c.summary}`)
    .join('\n')
  return `prompt-appview: an atproto AppView for Letta compiled prompts\n\nUsage: prompt-appview <command> [options]\n\nCommands:\n${list}\n\nRun \`prompt-appview <command> --help\` for a command's options and settings.\n`
}

export const COMMAND_NAMES = Object.keys(COMMANDS)
