import { collectionsOf } from '../config.ts'
import type { AppContext } from '../context.ts'
import { isKnownAccount } from '../db/known-accounts.ts'
import { listUnsynchronized, loadChainHead, loadTrackedDids } from '../db/repo-chain.ts'
import type { HandleVerifier } from '../model/handles.ts'
import { createDidResolver, type DidResolver } from './did-resolver.ts'
import { createFirehoseSource } from './firehose.ts'
import { createHandleVerifier } from './identity.ts'
import { createJetstreamSource, jetstreamOptionsFromConfig } from './jetstream.ts'
import { createJetstreamV2Source } from './jetstream-v2.ts'
import { createAutoJetstreamSource, wireOf } from './jetstream-wire.ts'
import { createReplaySource } from './replay.ts'
import type { Source } from './source.ts'

export interface SourceDeps {
  resolver?: DidResolver
}

/** The DID resolver the configuration asks for: PLC_URL, did:web, private hosts if allowed. */
export function resolverFor(
  config: AppContext['config'],
  metrics?: AppContext['metrics'],
): DidResolver {
  return createDidResolver({
    plcUrl: config.plcUrl,
    metrics,
    ...(config.allowPrivateNetwork ? { webFetch: fetch } : {}),
  })
}

/**
 * Handle checks cost two lookups each, and Jetstream sends identity events for every DID on
 * the network: verify only DIDs this index keeps (the indexer drops the rest anyway).
 */
function verifierForKnownDids(ctx: AppContext, resolver: DidResolver) {
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
export function createSource(ctx: AppContext, deps: SourceDeps = {}): CreatedSource {
  const { config, logger, metrics } = ctx
  const collections = collectionsOf(config)
  switch (config.source) {
    case 'replay':
      // Offline by design: a replay never reaches out to resolve anything.
      return {
        source: createReplaySource({ file: config.replayFile!, collections, logger, metrics }),
        verifyHandle: null,
      }
    case 'jetstream': {
      const resolver = deps.resolver ?? resolverFor(config, metrics)
      const source = jetstreamSourceFor(ctx, verifierForKnownDids(ctx, resolver))
      return { source, verifyHandle: createHandleVerifier({ resolver, metrics }) }
    }
    case 'firehose': {
      const resolver = deps.resolver ?? resolverFor(config, metrics)
      const source = createFirehoseSource({
        url: config.relayUrl,
        collections,
        resolver,
        verifyHandle: verifierForKnownDids(ctx, resolver),
        logger,
        metrics,
        unauthenticated: config.firehoseUnauthenticated,
        verifyThreads: config.verifyThreads,
        allowPrivateNetwork: config.allowPrivateNetwork,
        isKnownDid: (did) => isKnownAccount(ctx.db, did),
        chainStore: {
          loadHead: (did) => loadChainHead(ctx.db, did),
          loadTracked: (limit) => loadTrackedDids(ctx.db, limit),
          listUnsynchronized: (limit) => listUnsynchronized(ctx.db, limit),
        },
      })
      return { source, verifyHandle: createHandleVerifier({ resolver, metrics }) }
    }
  }
}

/**
 * The Jetstream source JETSTREAM_URL names: v1 `/subscribe`, v2 `subscribeEvents`, or a bare
 * host, which is asked (v2 when offered). `tuning` is for the demo and tests.
 */
export function jetstreamSourceFor(
  ctx: Pick<AppContext, 'config' | 'logger' | 'metrics'>,
  verifyHandle: HandleVerifier,
  tuning: { backoffBaseMs?: number } = {},
): Source {
  const { config, logger, metrics } = ctx
  const base = { ...jetstreamOptionsFromConfig(config), logger, metrics, verifyHandle, ...tuning }
  const make = {
    v1: (url: string) => createJetstreamSource({ ...base, url }),
    v2: (url: string) =>
      createJetstreamV2Source({
        ...base,
        url,
        onTooOld: config.jetstreamOnTooOld,
        zstd: config.jetstreamZstd,
      }),
  }
  const wire = wireOf(config.jetstreamUrl)
  if (wire !== 'auto') return make[wire](config.jetstreamUrl)
  return createAutoJetstreamSource(config.jetstreamUrl, make, { logger, ...tuning })
}
