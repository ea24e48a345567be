import { cborDecodeMulti } from '@atproto/common'
import type { Logger } from 'pino'
import { seqCursor } from '../../model/cursor.ts'
import type {
  AccountEvent,
  IdentityEvent,
  RepoSnapshotEvent,
  SourceItem,
} from '../../model/events.ts'
import type { HandleVerifier } from '../../model/handles.ts'
import type { Metrics } from '../../observe/metrics.ts'
import type { DidResolver } from '../did-resolver.ts'
import type { ChainFrames } from './chain/chain-frames.ts'
import {
  type CommitBody,
  type CommitContext,
  collectionOf,
  commitItems,
  isCommitBody,
} from './commit.ts'
import { collectionNeedles, skimUnmatchedCommit } from './frame-skim.ts'
import { eventUs, reasonOf, str, toTimeUs } from './values.ts'

// One subscribeRepos frame in, the SourceItems it means out. Kept apart from the socket so
// a benchmark can measure decode, filter and verification on recorded frames.

export interface FrameResult {
  items: SourceItem[]
  /** The frame's seq, when it had one. */
  seq: number | null
  /** An error frame (`FutureCursor`, `ConsumerTooSlow`, …): the server closes after it. */
  error?: { error: string; message?: string }
  /** An `#info` frame, e.g. `OutdatedCursor`. */
  info?: { name: string; message?: string }
}

export interface FrameProcessorOptions {
  collections: string[]
  resolver: DidResolver
  verifyHandle: HandleVerifier
  logger: Logger
  metrics: Metrics
  /** Skip signature and MST proof checks (a trusted relay, or benchmarks). */
  unauthenticated?: boolean
  /** The repo's current state, for `#sync` (and `tooBig` commits). */
  fetchSnapshot: (did: string) => Promise<RepoSnapshotEvent>
  /**
   * Whether this DID matters here (has or had records). A relay sends #sync and #identity
   * for every account on the network; for DIDs it says no to, those only move the cursor
   * instead of costing a getRepo or a handle lookup. Default: every DID matters.
   */
  isKnownDid?: (did: string) => boolean | Promise<boolean>
  /**
   * Sync 1.1 (verified firehose): every #commit and #sync of a tracked repo goes through the
   * chain checks, wanted ops or not; the frame skim then skips untracked repos only.
   */
  chain?: {
    frames: ChainFrames
    isTracked: (did: string) => boolean
    track: (did: string) => void
  }
}

export type FrameProcessor = (frame: Uint8Array) => Promise<FrameResult>

const SOURCE = 'firehose'

export function createFrameProcessor(opts: FrameProcessorOptions): FrameProcessor {
  const wanted = new Set(opts.collections)
  const { logger, metrics } = opts
  const countError = (collection: string, op: string) =>
    metrics.eventsTotal.inc({ source: SOURCE, collection, op, outcome: 'error' })
  const ctx: FrameContext = {
    opts,
    needles: collectionNeedles(opts.collections),
    chain: opts.unauthenticated ? undefined : opts.chain,
    countError,
    commit: {
      match: (collection) => wanted.has(collection),
      unauthenticated: opts.unauthenticated ?? false,
      resolveKey: (did, forceRefresh) => opts.resolver.resolveKey(did, { forceRefresh }),
      logger,
      countError,
    },
  }
  return (frame) => processFrame(ctx, frame)
}

/** What processing a frame needs, built once per processor. */
interface FrameContext {
  opts: FrameProcessorOptions
  needles: Buffer[]
  chain: FrameProcessorOptions['chain']
  countError: (collection: string, op: string) => void
  commit: CommitContext
}

type Body = Record<string, unknown>
type Header = { op?: number; t?: string }

/** A sequenced message, past the header checks. */
interface Message {
  t: string | undefined
  b: Body
  seq: number
  timeUs: number | null
  did: string
}

async function processFrame(ctx: FrameContext, frame: Uint8Array): Promise<FrameResult> {
  const skimmed = skimUnmatchedCommit(frame, ctx.needles)
  if (skimmed && !ctx.chain?.isTracked(skimmed.repo)) {
    const timeUs = toTimeUs(skimmed.time)
    return { items: [{ event: null, cursor: seqCursor(skimmed.seq), timeUs }], seq: skimmed.seq }
  }
  const decoded = decodeFrame(ctx, frame)
  if ('items' in decoded) return decoded
  const items = await messageItems(ctx, decoded)
  if (items) return { items, seq: decoded.seq }
  const { t, seq } = decoded
  ctx.countError('unknown', t === '#commit' ? 'unknown' : (t?.slice(1) ?? 'unknown'))
  ctx.opts.logger.warn({ seq, type: t }, 'malformed firehose message, skipped')
  return { items: [cursorOnly(decoded)], seq }
}

/** The frame's sequenced message, or the whole result of a frame that is not one. */
function decodeFrame(ctx: FrameContext, frame: Uint8Array): Message | FrameResult {
  let header: unknown
  let body: unknown
  try {
    ;[header, body] = cborDecodeMulti(frame)
  } catch (err) {
    ctx.countError('unknown', 'unknown')
    ctx.opts.logger.warn({ reason: reasonOf(err) }, 'undecodable firehose frame, skipped')
    return { items: [], seq: null }
  }
  const h = (header ?? {}) as Header
  const b = (body ?? {}) as Body
  if (h.op === -1)
    return { items: [], seq: null, error: { error: String(b.error), message: str(b.message) } }
  if (h.t === '#info')
    return { items: [], seq: null, info: { name: String(b.name), message: str(b.message) } }
  const seq = typeof b.seq === 'number' && Number.isSafeInteger(b.seq) ? b.seq : null
  if (h.op !== 1 || seq === null) {
    ctx.countError('unknown', 'unknown')
    ctx.opts.logger.warn({ header: h }, 'malformed firehose frame, skipped')
    return { items: [], seq: null }
  }
  const did = typeof b.did === 'string' ? b.did : ''
  return { t: h.t, b, seq, timeUs: toTimeUs(b.time), did }
}

/** The items of one message by its type; null when it is malformed. */
async function messageItems(ctx: FrameContext, m: Message): Promise<SourceItem[] | null> {
  switch (m.t) {
    case '#commit':
      return isCommitBody(m.b) ? commitFrameItems(ctx, m.b, m.timeUs) : null
    case '#account':
      return accountItems(m)
    case '#identity':
      return m.did ? identityItems(ctx, m) : null
    case '#sync':
      return m.did ? syncFrameItems(ctx, m) : null
    default:
      // A frame type newer than this code: nothing to index, but the cursor moves on.
      return [cursorOnly(m)]
  }
}

function cursorOnly(m: { seq: number; timeUs: number | null }): SourceItem {
  return { event: null, cursor: seqCursor(m.seq), timeUs: m.timeUs }
}

async function commitFrameItems(
  ctx: FrameContext,
  body: CommitBody,
  timeUs: number | null,
): Promise<SourceItem[]> {
  const { chain } = ctx
  const ops = body.ops.filter((op) => ctx.commit.match(collectionOf(op.path)))
  if (chain) {
    if (ops.length === 0 && !chain.isTracked(body.repo))
      return [cursorOnly({ seq: body.seq, timeUs })]
    // Tracked from its first wanted commit on, before it is checked: the frames right
    // behind it are skimmed meanwhile, and one skipped commit would break the chain.
    chain.track(body.repo)
    return chain.frames.commit(body, eventUs(timeUs))
  }
  if (ops.length === 0) return [cursorOnly({ seq: body.seq, timeUs })]
  if (body.tooBig) return snapshotItems(ctx, body.repo, body.seq, timeUs)
  return commitItems(ctx.commit, body, ops, timeUs)
}

function accountItems(m: Message): SourceItem[] | null {
  const { b, did, seq, timeUs } = m
  if (!did || typeof b.active !== 'boolean') return null
  const status = typeof b.status === 'string' ? b.status : null
  const event: AccountEvent = {
    kind: 'account',
    did,
    active: b.active,
    status,
    seq,
    timeUs: eventUs(timeUs),
  }
  return [{ event, cursor: seqCursor(seq), timeUs }]
}

async function identityItems(ctx: FrameContext, m: Message): Promise<SourceItem[]> {
  const { did, seq, timeUs } = m
  const { isKnownDid, verifyHandle } = ctx.opts
  if (isKnownDid && !(await isKnownDid(did))) return [cursorOnly(m)]
  const handle = await verifyHandle(did, str(m.b.handle) ?? null)
  const event: IdentityEvent = { kind: 'identity', did, handle, seq, timeUs: eventUs(timeUs) }
  return [{ event, cursor: seqCursor(seq), timeUs }]
}

function syncFrameItems(
  ctx: FrameContext,
  m: Message,
): SourceItem[] | Promise<SourceItem[]> | null {
  const { chain } = ctx
  const { b, did, seq, timeUs } = m
  if (!chain) return snapshotItems(ctx, did, seq, timeUs)
  if (typeof b.rev !== 'string' || !(b.blocks instanceof Uint8Array)) return null
  if (!chain.isTracked(did)) return [cursorOnly(m)]
  return chain.frames.sync({ did, rev: b.rev, blocks: b.blocks, seq }, eventUs(timeUs))
}

/** `#sync` (or a `tooBig` commit) without chain state: the repo as fetched now. */
async function snapshotItems(
  ctx: FrameContext,
  did: string,
  seq: number,
  timeUs: number | null,
): Promise<SourceItem[]> {
  const { isKnownDid, fetchSnapshot, logger } = ctx.opts
  try {
    if (isKnownDid && !(await isKnownDid(did))) return [cursorOnly({ seq, timeUs })]
    const snapshot = await fetchSnapshot(did)
    return [{ event: { ...snapshot, timeUs: eventUs(timeUs) }, cursor: seqCursor(seq), timeUs }]
  } catch (err) {
    ctx.countError('unknown', 'unknown')
    logger.warn(
      { did, seq, reason: reasonOf(err) },
      'firehose #sync: repo re-fetch failed, skipped',
    )
    return [cursorOnly({ seq, timeUs })]
  }
}
