import {
  bool,
  didWeb,
  int,
  nsid,
  nullable,
  oneOf,
  origin,
  type Parse,
  partition,
  pgMemory,
  str,
  trustProxy,
  url,
} from './parse.ts'

// One schema for every setting: flag name, environment variable, default, parser.
// Read by loadConfig (config.ts) and by the help text.

export const SOURCE_NAMES = ['jetstream', 'firehose', 'replay'] as const

interface Setting<K extends string, T> {
  key: K
  env: string
  flag: string
  default: T
  parse: Parse<T>
  help: string
}

/** The value's type comes from its parser alone: a default must fit it, never widen it. */
function setting<const K extends string, T>(
  key: K,
  env: string,
  def: NoInfer<T>,
  parse: Parse<T>,
  help: string,
): Setting<K, T> {
  const flag = env.toLowerCase().replaceAll('_', '-')
  return { key, env, flag, default: def, parse, help }
}

export const SETTINGS = [
  setting(
    'databaseUrl',
    'DATABASE_URL',
    null,
    (s) => (s === '' ? null : url('postgres:', 'postgresql:')(s)),
    'Postgres URL; absent: embedded PGlite in DATA_DIR',
  ),
  setting(
    'dataDir',
    'DATA_DIR',
    './data',
    str,
    'PGlite data directory (used when DATABASE_URL is absent)',
  ),
  setting(
    'pgliteSharedBuffers',
    'PGLITE_SHARED_BUFFERS',
    null,
    (s) =>
      s === ''
        ? null
        : pgMemory(128, 1024 * 1024, 'Postgres needs 16 buffers of 8kB; PGlite has 4GB in all')(s),
    'PGlite shared_buffers; absent: 8MB, for a small box (raise it for a large index)',
  ),
  setting(
    'pgliteMinFreeMb',
    'PGLITE_MIN_FREE_MB',
    64,
    int(0, 1_000_000),
    'Free space (MB) PGlite keeps under DATA_DIR: below it, ingestion pauses before a write can fill the disk',
  ),
  setting(
    'readTimeoutMs',
    'READ_TIMEOUT_MS',
    5000,
    int(100, 600_000),
    'Postgres statement timeout for reads: a slower read is cancelled and answered 503 with Retry-After',
  ),
  setting('source', 'SOURCE', 'jetstream', oneOf(SOURCE_NAMES), 'jetstream, firehose or replay'),
  setting(
    'jetstreamUrl',
    'JETSTREAM_URL',
    'wss://jetstream2.us-east.bsky.network/subscribe',
    url('ws:', 'wss:'),
    'Jetstream URL: /subscribe = v1, /xrpc/network.bsky.jetstream.subscribeEvents = v2, no path = v2 if offered, else v1',
  ),
  setting(
    'jetstreamOnTooOld',
    'JETSTREAM_ON_TOO_OLD',
    'stop',
    oneOf(['stop', 'tip'] as const),
    'Jetstream v2 refused the stored cursor (CursorTooOld): stop ingesting, or go on from the live tip (backfill either way)',
  ),
  setting(
    'jetstreamZstd',
    'JETSTREAM_ZSTD',
    true,
    bool,
    'Jetstream v2: ask for dictionary-zstd frames (falls back to text when that fails)',
  ),
  setting(
    'relayUrl',
    'RELAY_URL',
    'wss://bsky.network',
    url('ws:', 'wss:', 'http:', 'https:'),
    'Relay or PDS for the firehose (subscribeRepos) and backfill listing',
  ),
  setting(
    'plcUrl',
    'PLC_URL',
    'https://plc.directory',
    url('http:', 'https:'),
    'PLC directory for DID documents',
  ),
  setting(
    'replayFile',
    'REPLAY_FILE',
    null,
    nullable,
    'Jetstream-format NDJSON file for SOURCE=replay',
  ),
  setting('host', 'HOST', '127.0.0.1', str, 'HTTP listen address'),
  setting('port', 'PORT', 3000, int(0, 65535), 'HTTP port'),
  setting(
    'logLevel',
    'LOG_LEVEL',
    'info',
    oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
    'pino log level',
  ),
  setting(
    'adminToken',
    'ADMIN_TOKEN',
    null,
    nullable,
    'Bearer token for /admin endpoints; absent: no admin endpoints',
  ),
  setting(
    'trustProxy',
    'TRUST_PROXY',
    false,
    trustProxy,
    'Trust X-Forwarded-For (true, or addresses/CIDRs)',
  ),
  setting(
    'promptNsid',
    'PROMPT_NSID',
    'xyz.quasigod.lab.letta.compiledPrompt',
    nsid,
    'Prompt (sidecar) collection',
  ),
  setting(
    'conversationNsid',
    'CONVERSATION_NSID',
    'xyz.quasigod.lab.letta.conversation',
    nsid,
    'Conversation collection',
  ),
  setting('agentNsid', 'AGENT_NSID', 'xyz.quasigod.lab.letta.agent', nsid, 'Agent collection'),
  setting(
    'wantedCollections',
    'WANTED_COLLECTIONS',
    'xyz.quasigod.lab.letta.*',
    str,
    'Collection prefix asked of Jetstream',
  ),
  setting(
    'batchSize',
    'BATCH_SIZE',
    1000,
    int(1, 100_000),
    'Most events applied in one transaction',
  ),
  setting('batchDelayMs', 'BATCH_DELAY_MS', 20, int(0, 60_000), 'Longest wait to fill a batch'),
  setting(
    'queueSize',
    'QUEUE_SIZE',
    5000,
    int(1, 1_000_000),
    'Events buffered before the reader pauses',
  ),
  setting(
    'firehoseUnauthenticated',
    'FIREHOSE_UNAUTHENTICATED',
    false,
    bool,
    'Skip signature and MST verification of firehose commits',
  ),
  setting(
    'allowPrivateNetwork',
    'ALLOW_PRIVATE_NETWORK',
    false,
    bool,
    'Let DID documents name loopback or plain-http PDSes (local networks only)',
  ),
  setting(
    'jetstreamRewindSeconds',
    'JETSTREAM_REWIND_SECONDS',
    5,
    int(0, 3600),
    'Rewind on reconnect',
  ),
  setting(
    'rateLimitPerMinute',
    'RATE_LIMIT_PER_MINUTE',
    600,
    int(1, 10_000_000),
    'Requests per client address per minute',
  ),
  setting(
    'serviceDid',
    'SERVICE_DID',
    null,
    didWeb,
    'did:web of this AppView: serves /.well-known/did.json with a #prompt_appview service, so a PDS can proxy XRPC calls to it (atproto-proxy: <did>#prompt_appview)',
  ),
  setting(
    'publicUrl',
    'PUBLIC_URL',
    null,
    origin,
    "Origin clients and PDSes reach this AppView at (the service's endpoint); absent: https://<host of SERVICE_DID> (http for localhost)",
  ),
  setting(
    'partition',
    'PARTITION',
    null,
    partition,
    'Ingest only DIDs of hash partition i of n (i/n)',
  ),
] as const

/** Every setting's value by its key, typed by its parser. */
export type Config = {
  [S in (typeof SETTINGS)[number] as S['key']]: ReturnType<S['parse']>
}
