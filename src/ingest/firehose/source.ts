import { type SourceCursor, startValueOf } from '../../model/cursor.ts'
import type { RepoSnapshotEvent, Sink } from '../../model/events.ts'
import { fetchRepoSnapshot, withRetries } from '../backfill/repo-snapshot.ts'
import { createRefusalReporter } from '../cursor-refusals.ts'
import type { Source } from '../source.ts'
import { runWire } from '../ws-source.ts'
import {
  type ChainState,
  type FirehoseChain,
  type FirehoseChainOptions,
  startFirehoseChain,
} from './chain/firehose-chain.ts'
import { createFrameProcessor, type FrameProcessor, type FrameProcessorOptions } from './frame.ts'
import { FirehoseWire } from './wire.ts'

// com.atproto.sync.subscribeRepos of a relay or a single PDS. The stock @atproto/sync
// Firehose neither awaits its handler nor stops at a failed event, so the socket is read
// here: frames are processed concurrently (DID lookups overlap) but handed to the sink
// strictly in order, and reading pauses while too many are waiting (backpressure).

/** The frame processor's settings are the source's own (firehose/frame.ts documents them). */
type FrameSettings = Pick<
  FrameProcessorOptions,
  | 'collections'
  | 'resolver'
  | 'verifyHandle'
  | 'logger'
  | 'metrics'
  | 'unauthenticated'
  | 'isKnownDid'
>

export interface FirehoseSourceOptions extends FrameSettings {
  /** Relay or PDS: ws(s):// or http(s)://, with or without the /xrpc/… path. */
  url: string
  /** For `#sync`: default getRepo from the DID's PDS, verified, up to 3 tries. */
  fetchSnapshot?: (did: string, signal: AbortSignal) => Promise<RepoSnapshotEvent>
  /** Passed to the default fetchSnapshot: lets DID documents name loopback PDSes. */
  allowPrivateNetwork?: boolean
  /** Frames read but not yet handed to the sink before reading pauses. */
  maxInFlight?: number
  reconnectMinMs?: number
  reconnectMaxMs?: number
  /** No frame or pong for this long: the connection is presumed dead. */
  idleTimeoutMs?: number
  /**
   * Sync 1.1's stored chain state, loaded by the runtime (verified mode only); without it
   * commits are checked one by one.
   */
  chain?: ChainState
  /** Resync pacing (tests shorten it). */
  resync?: FirehoseChainOptions['resync']
}

export function createFirehoseSource(opts: FirehoseSourceOptions): Source {
  return {
    name: 'firehose',
    key: opts.url,
    provenance: 'firehose',
    resumesFrom: ['seq'],
    async run(sink: Sink, startCursor: SourceCursor | null, signal: AbortSignal) {
      const startSeq = startValueOf(startCursor, 'seq', 'firehose')
      let chain: FirehoseChain | null = null
      try {
        if (opts.chain && !opts.unauthenticated)
          chain = startFirehoseChain({ ...opts, state: opts.chain, sink, startCursor })
        const processor = makeProcessor(opts, signal, chain)
        await readUntilAborted(opts, sink, startSeq, signal, processor, chain)
      } finally {
        await chain?.close()
      }
    },
  }
}

function makeProcessor(
  opts: FirehoseSourceOptions,
  signal: AbortSignal,
  chain: FirehoseChain | null,
): FrameProcessor {
  const fetchSnapshot =
    opts.fetchSnapshot ??
    ((did: string, s: AbortSignal) =>
      withRetries(
        (attempt) =>
          fetchRepoSnapshot(did, {
            resolver: opts.resolver,
            collections: opts.collections,
            signal: s,
            allowPrivateNetwork: opts.allowPrivateNetwork,
            forceRefresh: attempt > 1,
            metrics: opts.metrics,
            logger: opts.logger,
          }),
        3,
        s,
      ))
  return createFrameProcessor({
    collections: opts.collections,
    resolver: opts.resolver,
    verifyHandle: opts.verifyHandle,
    logger: opts.logger,
    metrics: opts.metrics,
    unauthenticated: opts.unauthenticated,
    isKnownDid: opts.isKnownDid,
    fetchSnapshot: (did) => fetchSnapshot(did, signal),
    chain: chain ?? undefined,
  })
}

/** Connects, reads, and reconnects with backoff until aborted. */
function readUntilAborted(
  opts: FirehoseSourceOptions,
  sink: Sink,
  startSeq: number | null,
  signal: AbortSignal,
  processFrame: FrameProcessor,
  chain: FirehoseChain | null,
): Promise<void> {
  const { logger, metrics } = opts
  const refused = createRefusalReporter({ source: 'firehose', logger, metrics })
  const wire = new FirehoseWire(
    { url: opts.url, processFrame, logger, metrics, refused, chain },
    startSeq,
  )
  const idleTimeoutMs = opts.idleTimeoutMs ?? 60_000
  return runWire(wire, sink, signal, {
    source: 'firehose',
    metrics,
    // Equal jitter: a relay restart is not met by every consumer at the same instant, and
    // a floor stays under the wait.
    backoff: {
      baseMs: opts.reconnectMinMs ?? 1_000,
      maxMs: opts.reconnectMaxMs ?? 60_000,
      jitter: 'equal',
    },
    // Pings every half of the idle limit: one unanswered by the next is a dead connection.
    heartbeatMs: Math.max(100, Math.floor(idleTimeoutMs / 2)),
    readAhead: opts.maxInFlight ?? 256,
    onOpen: (url) => logger.info({ url }, 'firehose connected'),
    onRetry: ({ delayMs, end }) =>
      logger.info(
        { delayMs: Math.round(delayMs), cursor: wire.cursor, reason: end?.reason },
        'firehose reconnecting',
      ),
  })
}
