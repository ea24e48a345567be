import {
  bool,
  didWeb,
  int,
  nsid,
  nullable,
  oneOf,
  origin,
  orNull,
  type Parse,
  partition,
  pgMemory,
  str,
  trustProxy,
  url,
} from './parse.ts'

// One schema for every setting, read by loadConfig (config.ts) and the help text: the
// environment variable is the key in upper snake case, the flag that in lower kebab case.

/** The value's type comes from its parser alone: a default must fit it, never widen it. */
function setting<const K extends string, T>(
  key: K,
  def: NoInfer<T>,
  parse: Parse<T>,
  help: string,
) {
  const env = key.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()
  return { key, env, flag: env.toLowerCase().replaceAll('_', '-'), default: def, parse, help }
}

export const SETTINGS = [
  setting(
    'databaseUrl',
    null,
    orNull(url('postgres:', 'postgresql:')),
    'Postgres URL; absent: embedded PGlite in DATA_DIR',
  ),
  setting('dataDir', './data', str, 'PGlite data directory (used when DATABASE_URL is absent)'),
  setting(
    'pgliteSharedBuffers',
    null,
    orNull(pgMemory(128, 1024 * 1024, 'Postgres needs 16 buffers of 8kB; PGlite has 4GB in all')),
    'PGlite shared_buffers; absent: 8MB, for a small box (raise it for a large index)',
  ),
  setting(
    'pgliteMinFreeMb',
    64,
    int(0, 1_000_000),
    'Free space (MB) PGlite keeps under DATA_DIR: below it, ingestion pauses before a write can fill the disk',
  ),
  setting(
    'readTimeoutMs',
    5000,
    int(100, 600_000),
    'Postgres statement timeout for reads: a slower read is cancelled and answered 503 with Retry-After',
  ),
  setting(
    'source',
    'jetstream',
    oneOf(['jetstream', 'firehose', 'replay'] as const),
    'jetstream, firehose or replay',
  ),
  setting(
    'jetstreamUrl',
    'wss://jetstream2.us-east.bsky.network/subscribe',
    url('ws:', 'wss:'),
    'Jetstream URL: /subscribe = v1, /xrpc/network.bsky.jetstream.subscribeEvents = v2, no path = v2 if offered, else v1',
  ),
  setting(
    'jetstreamOnTooOld',
    'stop',
    oneOf(['stop', 'tip'] as const),
    'Jetstream v2 refused the stored cursor (CursorTooOld): stop ingesting, or go on from the live tip (backfill either way)',
  ),
  setting(
    'jetstreamZstd',
    true,
    bool,
    'Jetstream v2: ask for dictionary-zstd frames (falls back to text when that fails)',
  ),
  setting(
    'relayUrl',
    'wss://bsky.network',
    url('ws:', 'wss:', 'http:', 'https:'),
    'Relay or PDS for the firehose (subscribeRepos) and backfill listing',
  ),
  setting(
    'plcUrl',
    'https://plc.directory',
    url('http:', 'https:'),
    'PLC directory for DID documents',
  ),
  setting('replayFile', null, nullable, 'Jetstream-format NDJSON file for SOURCE=replay'),
  setting('host', '127.0.0.1', str, 'HTTP listen address'),
  setting('port', 3000, int(0, 65535), 'HTTP port'),
  setting(
    'logLevel',
    'info',
    oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
    'pino log level',
  ),
  setting(
    'adminToken',
    null,
    nullable,
    'Bearer token for /admin endpoints; absent: no admin endpoints',
  ),
  setting('trustProxy', false, trustProxy, 'Trust X-Forwarded-For (true, or addresses/CIDRs)'),
  setting(
    'promptNsid',
    'xyz.quasigod.lab.letta.compiledPrompt',
    nsid,
    'Prompt (sidecar) collection',
  ),
  setting(
    'conversationNsid',
    'xyz.quasigod.lab.letta.conversation',
    nsid,
    'Conversation collection',
  ),
  setting('agentNsid', 'xyz.quasigod.lab.letta.agent', nsid, 'Agent collection'),
  setting(
    'wantedCollections',
    'xyz.quasigod.lab.letta.*',
    str,
    'Collection prefix asked of Jetstream',
  ),
  setting('batchSize', 1000, int(1, 100_000), 'Most events applied in one transaction'),
  setting('batchDelayMs', 20, int(0, 60_000), 'Longest wait to fill a batch'),
  setting('queueSize', 5000, int(1, 1_000_000), 'Events buffered before the reader pauses'),
  setting(
    'firehoseUnauthenticated',
    false,
    bool,
    'Skip signature and MST verification of firehose commits',
  ),
  setting(
    'allowPrivateNetwork',
    false,
    bool,
    'Let DID documents name loopback or plain-http PDSes (local networks only)',
  ),
  setting('jetstreamRewindSeconds', 5, int(0, 3600), 'Rewind on reconnect'),
  setting('rateLimitPerMinute', 600, int(1, 10_000_000), 'Requests per client address per minute'),
  setting(
    'serviceDid',
    null,
    didWeb,
    'did:web of this AppView: serves /.well-known/did.json with a #prompt_appview service, so a PDS can proxy XRPC calls to it (atproto-proxy: <did>#prompt_appview)',
  ),
  setting(
    'publicUrl',
    null,
    origin,
    "Origin clients and PDSes reach this AppView at (the service's endpoint); absent: https://<host of SERVICE_DID> (http for localhost)",
  ),
  setting('partition', null, partition, 'Ingest only DIDs of hash partition i of n (i/n)'),
] as const

/** Every setting's value by its key, typed by its parser. */
export type Config = {
  [S in (typeof SETTINGS)[number] as S['key']]: ReturnType<S['parse']>
}
