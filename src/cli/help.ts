import { type Config, SETTINGS } from '../config/schema.ts'

/** The demo's default events per second: one the embedded indexer follows live on two cores. */
export const DEMO_RATE = 100

type Key = keyof Config

// The settings each command reads, so its --help lists those and no others.
const DATABASE: Key[] = ['databaseUrl', 'dataDir', 'pgliteSharedBuffers', 'logLevel']
const COLLECTIONS: Key[] = ['promptNsid', 'conversationNsid', 'agentNsid', 'wantedCollections']
/** The settings of the read API alone; HOST and PORT every server reads. */
const API: Key[] = [
  'adminToken',
  'trustProxy',
  'rateLimitPerMinute',
  'serviceDid',
  'publicUrl',
  'readTimeoutMs',
]
const HTTP: Key[] = ['host', 'port', ...API]
const PIPELINE: Key[] = ['batchSize', 'batchDelayMs', 'queueSize']
const JETSTREAM: Key[] = ['jetstreamRewindSeconds', 'jetstreamOnTooOld', 'jetstreamZstd']
const IDENTITY: Key[] = ['plcUrl', 'allowPrivateNetwork']
const ALL: Key[] = SETTINGS.map((s) => s.key)

const COMMAND_SETTINGS: Record<string, Key[]> = {
  run: ALL,
  // ingest serves only its health and metrics endpoints.
  ingest: ALL.filter((k) => !API.includes(k)),
  serve: [...DATABASE, ...COLLECTIONS, ...HTTP],
  backfill: [...DATABASE, 'pgliteMinFreeMb', ...COLLECTIONS, 'relayUrl', ...IDENTITY],
  // export's HOST and PORT name the server to fetch from when it holds the data directory.
  export: [...DATABASE, ...COLLECTIONS, 'host', 'port'],
  migrate: DATABASE,
  // The demo makes its own network, source and (without DATABASE_URL) data directory.
  demo: [
    'databaseUrl',
    'pgliteSharedBuffers',
    'pgliteMinFreeMb',
    'logLevel',
    ...COLLECTIONS,
    ...PIPELINE,
    ...JETSTREAM,
    ...HTTP,
  ],
}

// A command without options of its own is used as `prompt-appview <command> [settings]`.
const COMMANDS: Record<string, { summary: string; usage?: string; options?: string }> = {
  run: { summary: 'migrate, ingest and serve the API in one process (the default)' },
  ingest: { summary: 'migrate and ingest; serves only /healthz, /readyz and /metrics' },
  serve: {
    summary:
      'serve the read API from an existing database (read replicas; needs DATABASE_URL to share it)',
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
  migrate: { summary: 'apply database migrations and exit' },
  demo: {
    summary: 'a simulated local network (Jetstream) feeding the indexer, with the API on PORT',
    usage:
      'prompt-appview demo [--rate N] [--dids N] [--events N] [--wire v1|v2] [--jetstream-port P] [settings]',
    options:
      `  --rate N              events per second from the simulated network (default ${DEMO_RATE})\n` +
      '  --dids N              repos in the simulation (default 50)\n' +
      '  --events N            stop the simulation after N events (default: unbounded)\n' +
      '  --wire W              the Jetstream wire: v1 /subscribe (default) or v2 subscribeEvents with dictionary zstd\n' +
      "  --jetstream-port P    the local Jetstream's port on 127.0.0.1 (default: a free one)",
  },
}

/** The settings `command` reads, one line each. */
function settingsOf(command: string): string {
  const keys = new Set(COMMAND_SETTINGS[command])
  return SETTINGS.filter((s) => keys.has(s.key))
    .map(
      (s) =>
        `  --${s.flag.padEnd(26)} ${s.env.padEnd(26)} ${s.help}${s.default !== null ? ` (default ${JSON.stringify(s.default)})` : ''}`,
    )
    .join('\n')
}

export function helpText(command: string | null): string {
  if (command && COMMANDS[command]) {
    const c = COMMANDS[command]
    const usage = c.usage ?? `prompt-appview ${command} [settings]`
    return `${usage}\n\n${c.summary}\n${c.options ? `\nOptions:\n${c.options}\n` : ''}\nSettings (flag, environment variable; flags win over the environment):\n${settingsOf(command)}\n`
  }
  const list = Object.entries(COMMANDS)
    .map(([name, c]) => `  ${name.padEnd(10)} ${c.summary}`)
    .join('\n')
  return `prompt-appview: an atproto AppView for Letta compiled prompts\n\nUsage: prompt-appview <command> [options]\n\nCommands:\n${list}\n\nRun \`prompt-appview <command> --help\` for a command's options and settings.\n`
}

export const COMMAND_NAMES = Object.keys(COMMANDS)
