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

/**
 * Handle checks cost two lookups each, and Jetstream sends identity events for every DID on
 * the network: verify only DIDs this index keeps (the indexer drops the rest anyway).
 */
async function verifierForKnownDids(ctx: AppContext, resolver: DidResolver) {
  const { createHandleVerifier } = await import('../ingest/identity.ts')
  const verify = createHandleVerifier({ resolver, metrics: ctx.metrics })
  return async (did: string, claimed: string | null): Promise<string | null> =>
    (await isKnownAccount(ctx.db, did)) ? verify(did, claimed) : null
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
      const { createHandleVerifier } = await import('../ingest/identity.ts')
      const { resolverFor } = await import('../ingest/did-resolver.ts')
      const resolver = deps.resolver ?? resolverFor(config, metrics)
      const source = jetstreamSourceFor(ctx, await verifierForKnownDids(ctx, resolver))
      return { source, verifyHandle: createHandleVerifier({ resolver, metrics }) }
    }
    case 'firehose': {
      const { createFirehoseSource } = await import('../ingest/firehose/source.ts')
      const { createHandleVerifier } = await import('../ingest/identity.ts')
      const { resolverFor } = await import('../ingest/did-resolver.ts')
      const resolver = deps.resolver ?? resolverFor(config, metrics)
      const source = createFirehoseSource({
        url: config.relayUrl,
        collections,
        resolver,
        verifyHandle: await verifierForKnownDids(ctx, resolver),
        logger,
        metrics,
        unauthenticated: config.firehoseUnauthenticated,
        allowPrivateNetwork: config.allowPrivateNetwork,
        isKnownDid: (did) => isKnownAccount(ctx.db, did),
        chain: config.firehoseUnauthenticated ? undefined : await chainStateOf(ctx.db),
      })
      return { source, verifyHandle: createHandleVerifier({ resolver, metrics }) }
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
