import type { Logger } from 'pino'
import type { Sink, SourceItem } from '../../model/events.ts'
import type { Metrics } from '../../observe/metrics.ts'
import { pushUnlessAborted } from '../abortable.ts'
import type { RefusalReporter } from '../cursor-refusals.ts'
import type { NextStep } from '../ws-session.ts'
import type { Wire, WireConnection } from '../ws-source.ts'
import type { FirehoseChain } from './chain/firehose-chain.ts'
import { createFrameGuard } from './cursor.ts'
import type { FrameProcessor, FrameResult } from './frame.ts'

// subscribeRepos over the one runner (ws-source.ts). Frames are processed concurrently as
// they arrive (DID lookups and signature checks overlap) but their results come out strictly
// in arrival order; reading pauses while the runner's readAhead of them wait. The cursor is
// the relay's seq, checked per connection by the frame guard (cursor.ts).

export interface FirehoseWireOptions {
  url: string
  processFrame: FrameProcessor
  logger: Logger
  metrics: Metrics
  refused: RefusalReporter
  chain: FirehoseChain | null
}

type SizedResult = FrameResult & { bytes: number }

function subscribeReposUrl(base: string, cursor: number | null): string {
  const u = new URL(base)
  if (u.protocol === 'http:') u.protocol = 'ws:'
  if (u.protocol === 'https:') u.protocol = 'wss:'
  if (!u.pathname.endsWith('/xrpc/com.atproto.sync.subscribeRepos')) {
    u.pathname = `${u.pathname.replace(/\/+$/, '')}/xrpc/com.atproto.sync.subscribeRepos`
  }
  if (cursor === null) u.searchParams.delete('cursor')
  else u.searchParams.set('cursor', String(cursor))
  return u.toString()
}

export class FirehoseWire implements Wire<Promise<SizedResult>> {
  /** The seq of the newest item handed on: where a reconnect resumes. */
  cursor: number | null
  readonly #o: FirehoseWireOptions
  /** The error frame the current connection ended with, if any. */
  #errorFrame: string | null = null

  constructor(o: FirehoseWireOptions, startSeq: number | null) {
    this.#o = o
    this.cursor = startSeq
  }

  async url(): Promise<string> {
    return subscribeReposUrl(this.#o.url, this.cursor)
  }

  /** Processing starts as the frame arrives (lookups overlap); results are read in order. */
  accept(data: Buffer, binary: boolean): Promise<SizedResult> | null {
    if (!binary) return null
    const bytes = data.byteLength
    return this.#o
      .processFrame(new Uint8Array(data.buffer, data.byteOffset, data.byteLength))
      .then((r) => ({ ...r, bytes }))
      .catch((err) => {
        this.#o.logger.error({ err }, 'firehose frame processing failed')
        return { items: [], seq: null, bytes }
      })
  }

  open(_url: string, sink: Sink, signal: AbortSignal): WireConnection<Promise<SizedResult>> {
    this.#errorFrame = null
    this.#o.chain?.onConnect()
    // Each connection starts from the cursor it asked for; a candidate seq dies with it.
    const guard = createFrameGuard({ accepted: this.cursor, candidate: null }, this.#o.refused)
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
      this.#o.chain?.onPushed(item)
    }
    return true
  }
}
