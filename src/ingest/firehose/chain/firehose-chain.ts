import type { Logger } from 'pino'
import type { ChainHead } from '../../../db/repo-chain.ts'
import type { SourceCursor } from '../../../model/cursor.ts'
import type { ChainEvent, RepoSnapshotEvent, Sink, SourceItem } from '../../../model/events.ts'
import type { Metrics } from '../../../observe/metrics.ts'
import { fetchSnapshotWithRetries } from '../../backfill/repo-snapshot.ts'
import type { DidResolver } from '../../did-resolver.ts'
import { type ChainFrames, createChainFrames } from './chain-frames.ts'
import { type HeldCommit, ResyncBuffer } from './resync-buffer.ts'
import { Resyncer, type ResyncerOptions } from './resyncer.ts'
import { ChainTracker } from './tracker.ts'

// Sync 1.1 for one run of the firehose: tracker, chain checks and resyncer tied to the sink; a
// resync is asked for once the break is handed on, so its snapshot lands after it.

/** The stored chain state a run starts from, handed in by the runtime (no source reads the store). */
export interface ChainState {
  /** Repos with records here, newest first: their every commit is checked. */
  tracked: readonly string[]
  /** Repos a break or an interrupted resync left out of sync before this run. */
  unsynchronized: readonly string[]
  /** A repo's stored head, for one the tracker holds no head of (heads are read as needed). */
  loadHead: (did: string) => Promise<ChainHead | null>
}

export interface FirehoseChainOptions {
  state: ChainState
  sink: Sink
  startCursor: SourceCursor | null
  resolver: DidResolver
  collections: string[]
  allowPrivateNetwork?: boolean
  logger: Logger
  metrics: Metrics
  maxTracked?: number
  resync?: Partial<
    Pick<ResyncerOptions, 'retryBaseMs' | 'retryMaxMs' | 'maxAttempts' | 'perRepoPerMinute'>
  >
  /** Default: a verified getRepo from the DID's PDS. */
  fetchSnapshot?: (did: string, signal: AbortSignal) => Promise<RepoSnapshotEvent>
}

export interface FirehoseChain {
  frames: ChainFrames
  isTracked: (did: string) => boolean
  track: (did: string) => void
  /** Every item the connection handed to the sink, in order. */
  onPushed: (item: SourceItem) => void
  onConnect: () => void
  close: () => Promise<void>
}

export function startFirehoseChain(o: FirehoseChainOptions): FirehoseChain {
  const { logger, metrics } = o
  const tracker = new ChainTracker({ loadHead: o.state.loadHead, logger, maxTracked: o.maxTracked })
  for (const did of o.state.tracked) tracker.track(did)
  let cursor = o.startCursor
  let cursorKnown: (() => void) | null = null
  const cursorReady = new Promise<void>((r) => {
    cursorKnown = r
  })
  if (cursor !== null) cursorKnown!()

  const held = new ResyncBuffer({ logger })
  const emit = async (event: ChainEvent | RepoSnapshotEvent | SourceItem['event']) => {
    if (!event) return
    // Out-of-band items ride at the cursor already handed on: they never move it.
    await cursorReady
    await o.sink.push({ event, cursor: cursor!, timeUs: event.timeUs })
    if (event.kind !== 'chain') return
    tracker.pushed(event)
    if (event.reason === 'resync_failed') held.drop(event.did)
  }
  // Judged again in arrival order; registered at once, so before any later live frame.
  const replayHeld = (commits: HeldCommit[]) => {
    const judged = commits.map((c) => frames.commit(c.body, c.timeUs))
    void (async () => {
      for (const items of judged) for (const it of await items) await emit(it.event)
    })().catch((err) => logger.error({ err }, 'replaying commits held during a resync failed'))
  }
  const resyncer = new Resyncer({
    ...o.resync,
    fetchSnapshot: o.fetchSnapshot ?? pdsSnapshots(o),
    hostOf: async (did) => new URL(await o.resolver.resolvePds(did)).host,
    emit,
    head: (did) => tracker.head(did),
    settle: (chain) => {
      tracker.settle(chain)
      const commits = held.take(chain.did)
      if (commits.length > 0) replayHeld(commits)
    },
    logger,
    metrics,
  })
  const wanted = new Set(o.collections)
  const frames = createChainFrames({
    tracker,
    resolveKey: (did, forceRefresh) => o.resolver.resolveKey(did, { forceRefresh }),
    match: (c) => wanted.has(c),
    logger,
    metrics,
    hold: (body, timeUs) => void held.hold(body, timeUs),
    onWaiting: (did) => {
      // Only once the break is handed on (or it came from the database): see above.
      const state = tracker.pushedState(did)
      if (state === undefined || state !== 'synchronized') resyncer.request(did)
    },
  })
  // Repos a break or an interrupted resync left out of sync before this run.
  for (const did of o.state.unsynchronized) resyncer.request(did)
  logger.info({ tracked: tracker.trackedCount }, 'firehose chain state loaded')

  return {
    frames,
    isTracked: (did) => tracker.isTracked(did),
    track: (did) => tracker.track(did),
    onPushed(item) {
      if (item.cursor !== null) cursor = item.cursor
      cursorKnown?.()
      cursorKnown = null
      const ev = item.event
      if (ev?.kind !== 'chain') return
      tracker.pushed(ev)
      if (ev.state === 'desynchronized') resyncer.request(ev.did)
    },
    onConnect: () => tracker.resetConnection(),
    close: () => resyncer.close(),
  }
}

type SnapshotSettings = 'resolver' | 'collections' | 'allowPrivateNetwork' | 'metrics' | 'logger'

/** A verified getRepo from the DID's PDS (backfill/repo-snapshot.ts), tried `attempts` times. */
export function pdsSnapshots(o: Pick<FirehoseChainOptions, SnapshotSettings>, attempts = 1) {
  const { resolver, collections, allowPrivateNetwork, metrics, logger } = o
  const settings = { resolver, collections, allowPrivateNetwork, metrics, logger }
  return (did: string, signal: AbortSignal) =>
    fetchSnapshotWithRetries(did, { ...settings, signal }, attempts)
}
