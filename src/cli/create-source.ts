import { collectionsOf } from '../config/config.ts'
import type { AppContext } from '../context/context.ts'
import type { Database } from '../db/client.ts'
import { isKnownAccount } from '../db/read/accounts.ts'
import { listUnsynchronized, loadChainHead, loadTrackedDids } from '../db/repo-chain.ts'
import type { DidResolver } from '../ingest/did-resolver.ts'
import type { ChainState } from '../ingest/firehose/chain/firehose-chain.ts'
import type { Source } from '../ingest/source.ts'
import type { HandleVerifier } from '../model/handles.ts'

// Each source loads with its own modules only when it is the one configured: a replay
// (npm start) carries no WebSocket client, DID resolution or firehose verifier, and the
// firehose's @atproto libraries load only for SOURCE=firehose.

export interface SourceDeps {
  resolver?: DidResolver
}

/** The resolver and handle checks of a source that reaches the network. */
async function networkIdentity(ctx: AppContext, deps: SourceDeps) {
  const { createHandleVerifier } = await import('../ingest/identity.ts')
  const { resolverFor } = await import('../ingest/did-resolver.ts')
  const resolver = deps.resolver ?? resolverFor(ctx.config, ctx.metrics)
  const verifyHandle = createHandleVerifier({ resolver, metrics: ctx.metrics })
  // Handle checks cost two lookups each, and Jetstream sends identity events for every DID
  // on the network: the source verifies only DIDs this index keeps (the indexer drops the rest).
  const verifyKnown: HandleVerifier = async (did, claimed) =>
    (await isKnownAccount(ctx.db, did)) ? verifyHandle(did, claimed) : null
  return { resolver, verifyHandle, verifyKnown }
}

export interface CreatedSource {
  source: Source
  /** Verifies handles both ways, for sources that reach the network; null for replay. */
  verifyHandle: HandleVerifier | null
}

/** The source the configuration names, wired to the context's logger and metrics. */
export async function createSource(ctx: AppContext, deps: SourceDeps = {}): Promise<CreatedSource> {
  const { config, logger, metrics } = ctx
  const collections = collectionsOf(config)
  switch (config.source) {
    case 'replay': {
      // Offline by design: a replay never reaches out to resolve anything.
      const { createReplaySource } = await import('../ingest/replay.ts')
      return {
        source: createReplaySource({ file: config.replayFile!, collections, logger, metrics }),
        verifyHandle: null,
      }
    }
    case 'jetstream': {
      const { jetstreamSourceFor } = await import('../ingest/jetstream/wire.ts')
      const { verifyHandle, verifyKnown } = await networkIdentity(ctx, deps)
      return { source: jetstreamSourceFor(ctx, verifyKnown), verifyHandle }
    }
    case 'firehose': {
      const { createFirehoseSource } = await import('../ingest/firehose/source.ts')
      const { resolver, verifyHandle, verifyKnown } = await networkIdentity(ctx, deps)
      const source = createFirehoseSource({
        url: config.relayUrl,
        collections,
        resolver,
        verifyHandle: verifyKnown,
        logger,
        metrics,
        unauthenticated: config.firehoseUnauthenticated,
        allowPrivateNetwork: config.allowPrivateNetwork,
        isKnownDid: (did) => isKnownAccount(ctx.db, did),
        chain: config.firehoseUnauthenticated ? undefined : await chainStateOf(ctx.db),
      })
      return { source, verifyHandle }
    }
  }
}

/** What the firehose's Sync 1.1 checks start from, read here so that no source reads the store. */
async function chainStateOf(db: Database): Promise<ChainState> {
  const { MAX_TRACKED } = await import('../ingest/firehose/chain/tracker.ts')
  const [tracked, unsynchronized] = await Promise.all([
    loadTrackedDids(db, MAX_TRACKED),
    listUnsynchronized(db, 1_000),
  ])
  return { tracked, unsynchronized, loadHead: (did) => loadChainHead(db, did) }
}
