import type { Logger } from 'pino'
import type { Sink, SourceItem } from '../../model/events.ts'
import type { Metrics } from '../../observe/metrics.ts'
import { pushUnlessAborted } from '../abortable.ts'
import { type SessionEnd, WsSession } from '../ws-session.ts'
import type { FrameProcessor, FrameResult } from './frame.ts'

// One subscribeRepos connection over the shared session (ws-session.ts). Frames are processed
// concurrently as they arrive (DID lookups and signature checks overlap) but their results
// come out strictly in arrival order; reading pauses while maxInFlight results wait, and
// resumes at half of that. What is the firehose's own: error and info frames.

export interface ConnectParams {
  url: string
  processFrame: FrameProcessor
  sink: Sink
  metrics: Metrics
  signal: AbortSignal
  maxInFlight: number
  idleTimeoutMs: number
  logger: Logger
  /** Checks each frame's seq and time before its items may carry the cursor and the lag. */
  guard: (result: FrameResult) => SourceItem[]
  onItem: (item: SourceItem) => void
}

type SizedResult = FrameResult & { bytes: number }

/** One connection, until it closes or `signal` aborts; every frame read is handed on. */
export async function connectOnce(
  p: ConnectParams,
): Promise<{ end: SessionEnd; errorFrame?: string }> {
  const ws = new WsSession<Promise<SizedResult>>({
    url: p.url,
    signal: p.signal,
    // Pings every half of the idle limit: one unanswered by the next is a dead connection.
    heartbeatMs: Math.max(100, Math.floor(p.idleTimeoutMs / 2)),
    readAhead: p.maxInFlight,
    // Processing starts as the frame arrives (lookups overlap); results are read in order.
    accept: (data, binary) => (binary ? process(p, data) : null),
    onOpen: () => p.logger.info({ url: p.url }, 'firehose connected'),
  })
  let errorFrame: string | undefined
  for await (const pending of ws.frames()) {
    const result = await pending
    if (result.error) {
      errorFrame = result.error.error
      p.logger.error({ error: result.error }, 'firehose error frame')
    }
    if (result.info) logInfoFrame(result.info, p.logger, p.metrics)
    if (!(await pushFrame(p, result))) break
  }
  return { end: await ws.ended, errorFrame }
}

function process(p: ConnectParams, data: Buffer): Promise<SizedResult> {
  const bytes = data.byteLength
  return p
    .processFrame(new Uint8Array(data.buffer, data.byteOffset, data.byteLength))
    .then((r) => ({ ...r, bytes }))
    .catch((err) => {
      p.logger.error({ err }, 'firehose frame processing failed')
      return { items: [], seq: null, bytes }
    })
}

/** Hands a frame's items to the sink in order; false once aborted. */
async function pushFrame(p: ConnectParams, result: SizedResult): Promise<boolean> {
  for (const [i, it] of p.guard(result).entries()) {
    if (p.signal.aborted) return false
    // The frame's size rides on its first item: the queue downstream is bounded by it.
    const item = i === 0 ? { ...it, bytes: result.bytes } : it
    if (!(await pushUnlessAborted(p.sink, item, p.signal))) return false
    p.onItem(item)
  }
  return true
}

function logInfoFrame(
  info: NonNullable<FrameResult['info']>,
  logger: Logger,
  metrics: Metrics,
): void {
  if (info.name === 'OutdatedCursor') {
    metrics.resumeGapsTotal.inc({ source: 'firehose' })
    logger.warn(
      { info },
      'firehose cursor is older than the upstream keeps: events were missed, run backfill',
    )
  } else logger.info({ info }, 'firehose info frame')
}
