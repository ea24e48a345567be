import { type SourceCursor, startValueOf } from '../../model/cursor.ts'
import type { RepoSnapshotEvent, Sink, SourceItem } from '../../model/events.ts'
import { steadyNowMs } from '../../observe/clock.ts'
import {
  createRefusalReporter,
  guardSeqFrame,
  type RefusalReporter,
  type SeqTrack,
} from '../cursor-guard.ts'
import { pushUnlessAborted, type Source } from '../source.ts'
import {
  type NextStep,
  runWire,
  type Wire,
  type WireConnection,
  type WireRunOptions,
  withQuery,
} from '../ws-source.ts'
import {
  type ChainState,
  type FirehoseChain,
  type FirehoseChainOptions,
  pdsSnapshots,
  startFirehoseChain,
} from './chain/firehose-chain.ts'
import {
  createFrameProcessor,
  type FrameProcessor,
  type FrameProcessorOptions,
  type FrameResult,
} from './frame.ts'

// subscribeRepos of a relay or PDS over the one runner (@atproto/sync's Firehose neither awaits
// its handler nor stops at a failed event): frames processed concurrently, handed on in order.

/** The frame processor's settings are the source's own (firehose/frame.ts documents them). */
export interface FirehoseSourceOptions
  extends Omit<FrameProcessorOptions, 'fetchSnapshot' | 'chain'> {
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
  /** Sync 1.1's stored chain state (verified mode only); without it commits are checked alone. */
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
        const fetchSnapshot = opts.fetchSnapshot ?? pdsSnapshots(opts, 3)
        const processFrame = createFrameProcessor({
          ...opts,
          fetchSnapshot: (did) => fetchSnapshot(did, signal),
          chain: chain ?? undefined,
        })
        const wire = new FirehoseWire(opts, processFrame, chain, startSeq)
        await runWire(wire, sink, signal, wire.runOptions())
      } finally {
        await chain?.close()
      }
    },
  }
}

type SizedResult = FrameResult & { bytes: number }

function subscribeReposUrl(base: string, cursor: number | null): string {
  const u = new URL(base)
  if (u.protocol === 'http:') u.protocol = 'ws:'
  if (u.protocol === 'https:') u.protocol = 'wss:'
  if (!u.pathname.endsWith('/xrpc/com.atproto.sync.subscribeRepos')) {
    u.pathname = `${u.pathname.replace(/\/+$/, '')}/xrpc/com.atproto.sync.subscribeRepos`
  }
  return withQuery(u.toString(), { cursor })
}

class FirehoseWire implements Wire<Promise<SizedResult>> {
  /** The seq of the newest item handed on: where a reconnect resumes. */
  cursor: number | null
  readonly #o: FirehoseSourceOptions
  readonly #processFrame: FrameProcessor
  readonly #chain: FirehoseChain | null
  readonly #refused: RefusalReporter
  /** The error frame the current connection ended with, if any. */
  #errorFrame: string | null = null

  constructor(
    o: FirehoseSourceOptions,
    processFrame: FrameProcessor,
    chain: FirehoseChain | null,
    startSeq: number | null,
  ) {
    this.#o = o
    this.#processFrame = processFrame
    this.#chain = chain
    this.#refused = createRefusalReporter({ source: 'firehose', ...o })
    this.cursor = startSeq
  }

  runOptions(): WireRunOptions {
    const o = this.#o
    const idleTimeoutMs = o.idleTimeoutMs ?? 60_000
    return {
      source: 'firehose',
      metrics: o.metrics,
      // Equal jitter: a relay restart is not met by every consumer at the same instant, and
      // a floor stays under the wait.
      backoff: {
        baseMs: o.reconnectMinMs ?? 1_000,
        maxMs: o.reconnectMaxMs ?? 60_000,
        jitter: 'equal',
      },
      // Pings every half of the idle limit: one unanswered by the next is a dead connection.
      heartbeatMs: Math.max(100, Math.floor(idleTimeoutMs / 2)),
      readAhead: o.maxInFlight ?? 256,
      onOpen: (url) => o.logger.info({ url }, 'firehose connected'),
      onRetry: ({ delayMs, end }) =>
        o.logger.info(
          { delayMs: Math.round(delayMs), cursor: this.cursor, reason: end.reason },
          'firehose reconnecting',
        ),
    }
  }

  async url(): Promise<string> {
    return subscribeReposUrl(this.#o.url, this.cursor)
  }

  /** Processing starts as the frame arrives (lookups overlap); results are read in order. */
  accept(data: Buffer, binary: boolean): Promise<SizedResult> | null {
    if (!binary) return null
    const bytes = data.byteLength
    return this.#processFrame(new Uint8Array(data.buffer, data.byteOffset, data.byteLength))
      .then((r) => ({ ...r, bytes }))
      .catch((err) => {
        this.#o.logger.error({ err }, 'firehose frame processing failed')
        return { items: [], seq: null, bytes }
      })
  }

  open(_url: string, sink: Sink, signal: AbortSignal): WireConnection<Promise<SizedResult>> {
    this.#errorFrame = null
    this.#chain?.onConnect()
    // Each connection starts from the cursor it asked for; a candidate seq dies with it.
    const guard = frameGuard({ accepted: this.cursor, candidate: null }, this.#refused)
    return {
      frame: async (pending) => {
        const result = await pending
        this.#noteControl(result)
        return (await this.#push(guard(result), result.bytes, sink, signal)) ? 'continue' : 'abort'
      },
    }
  }

  end(): NextStep {
    if (this.#errorFrame === 'FutureCursor') {
      // The upstream never reached this cursor (reset, or another host behind the URL):
      // waiting will not help. Start at the tip and tell the operator to backfill.
      this.#o.metrics.resumeGapsTotal.inc({ source: 'firehose' })
      this.#o.logger.error(
        { cursor: this.cursor },
        'firehose cursor is ahead of the upstream; restarting at the live tip, run backfill to close the gap',
      )
      this.cursor = null
    }
    return 'retry'
  }

  #noteControl(result: FrameResult): void {
    const { logger, metrics } = this.#o
    if (result.error) {
      this.#errorFrame = result.error.error
      logger.error({ error: result.error }, 'firehose error frame')
    }
    if (!result.info) return
    if (result.info.name === 'OutdatedCursor') {
      metrics.resumeGapsTotal.inc({ source: 'firehose' })
      logger.warn(
        { info: result.info },
        'firehose cursor is older than the upstream keeps: events were missed, run backfill',
      )
    } else logger.info({ info: result.info }, 'firehose info frame')
  }

  /** Hands a frame's items to the sink in order; false once aborted. */
  async #push(items: SourceItem[], bytes: number, sink: Sink, signal: AbortSignal) {
    for (const [i, it] of items.entries()) {
      if (signal.aborted) return false
      // The frame's size rides on its first item: the queue downstream is bounded by it.
      const item = i === 0 ? { ...it, bytes } : it
      if (!(await pushUnlessAborted(sink, item, signal))) return false
      if (item.cursor !== null) this.cursor = item.cursor.value
      this.#chain?.onPushed(item)
    }
    return true
  }
}

/** The relay's seq sits outside the signed commit: one hostile seq must not become the cursor. */
function frameGuard(start: SeqTrack, refused: RefusalReporter): (r: FrameResult) => SourceItem[] {
  let track = start
  return (result) => {
    if (result.seq === null) return result.items
    const g = guardSeqFrame(track, result.seq, result.items, steadyNowMs() * 1000)
    track = g.track
    for (const reason of g.refusals) refused(reason, { seq: result.seq, cursor: track.accepted })
    return g.items
  }
}
