import { cborDecodeMulti } from '@atproto/common'
import { parseCommitUnauthenticated } from '@atproto/sync'
import type { Logger } from 'pino'
import { seqCursor } from '../../model/cursor.ts'
import type {
  AccountEvent,
  CommitEvent,
  IdentityEvent,
  RepoSnapshotEvent,
  SourceItem,
} from '../../model/events.ts'
import type { HandleVerifier } from '../../model/handles.ts'
import { steadyNowMs } from '../../observe/clock.ts'
import type { Metrics } from '../../observe/metrics.ts'
import type { DidResolver } from '../did-resolver.ts'
import type { ChainFrames } from './chain/chain-frames.ts'
import { type CommitBody, type KeyLookup, opEvents, verifyCommit } from './signature.ts'

// One subscribeRepos frame in, the SourceItems it means out (a `#commit` without chain state
// proven against its MST and signature here). Apart from the socket, so a benchmark can
// measure decode, filter and verification on recorded frames.

type RepoOp = CommitBody['ops'][number]
type ParsedOps = Awaited<ReturnType<typeof parseCommitUnauthenticated>>

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
  /** Whether this DID has or had records here: others' #sync and #identity only move the cursor. */
  isKnownDid?: (did: string) => boolean | Promise<boolean>
  /** Sync 1.1: every #commit and #sync of a tracked repo is chain-checked, wanted ops or not. */
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
  const countError = (collection: string, op: string) =>
    opts.metrics.eventsTotal.inc({ source: SOURCE, collection, op, outcome: 'error' })
  const ctx: FrameContext = {
    ...opts,
    chain: opts.unauthenticated ? undefined : opts.chain,
    countError,
    match: (collection) => wanted.has(collection),
    resolveKey: (did, forceRefresh) => opts.resolver.resolveKey(did, { forceRefresh }),
  }
  return (frame) => processFrame(ctx, frame)
}

/** What processing a frame needs, built once per processor. */
type FrameContext = FrameProcessorOptions & {
  countError: (collection: string, op: string) => void
  match: (collection: string) => boolean
  resolveKey: KeyLookup
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
  const decoded = decodeFrame(ctx, frame)
  if ('items' in decoded) return decoded
  const items = await messageItems(ctx, decoded)
  if (items) return { items, seq: decoded.seq }
  const { t, seq } = decoded
  ctx.countError('unknown', t === '#commit' ? 'unknown' : (t?.slice(1) ?? 'unknown'))
  ctx.logger.warn({ seq, type: t }, 'malformed firehose message, skipped')
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
    ctx.logger.warn({ reason: reasonOf(err) }, 'undecodable firehose frame, skipped')
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
    ctx.logger.warn({ header: h }, 'malformed firehose frame, skipped')
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
  const ops = body.ops.filter((op) => ctx.match(collectionOf(op.path)))
  if (chain) {
    if (ops.length === 0 && !chain.isTracked(body.repo))
      return [cursorOnly({ seq: body.seq, timeUs })]
    // Tracked from its first wanted commit on, before it is checked: the frames right
    // behind it are processed meanwhile, and one skipped commit would break the chain.
    chain.track(body.repo)
    return chain.frames.commit(body, eventUs(timeUs))
  }
  if (ops.length === 0) return [cursorOnly({ seq: body.seq, timeUs })]
  if (body.tooBig) return snapshotItems(ctx, body.repo, body.seq, timeUs)
  return commitItems(ctx, body, ops, timeUs)
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
  const { isKnownDid, verifyHandle } = ctx
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
  const { isKnownDid, fetchSnapshot, logger } = ctx
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

/** The items of a commit's wanted `ops`; one cursor-only item when none survives. */
async function commitItems(
  ctx: FrameContext,
  body: CommitBody,
  ops: RepoOp[],
  timeUs: number | null,
): Promise<SourceItem[]> {
  const seq = body.seq
  const parsed = await parseOps(ctx, body, ops)
  if (parsed === null) return [cursorOnly({ seq, timeUs })]
  const events = opEvents(body, parsed, ctx.match, eventUs(timeUs), (op, collection, reason) => {
    ctx.countError(collection, opLabel(op))
    ctx.logger.warn(
      { did: body.repo, seq, path: op.path, action: op.action, reason },
      `firehose op skipped: ${reason}`,
    )
  })
  if (events.length === 0) return [cursorOnly({ seq, timeUs })]
  // Only the last item of a frame completes it: a cursor committed after an earlier item
  // must make a restart replay the whole frame (seq - 1), never skip the rest of it.
  const last = events.length - 1
  return events.map((event, i) => ({ event, cursor: seqCursor(i < last ? seq - 1 : seq), timeUs }))
}

/** The proven ops; null (counted and logged) when the commit fails verification. */
async function parseOps(
  ctx: FrameContext,
  body: CommitBody,
  ops: RepoOp[],
): Promise<ParsedOps | null> {
  try {
    if (ctx.unauthenticated) return await parseCommitUnauthenticated(body, ctx.match)
    return (await verifyCommit(ctx.resolveKey, body, ctx.match)).events
  } catch (err) {
    for (const op of ops) ctx.countError(collectionOf(op.path), opLabel(op))
    ctx.logger.warn(
      { did: body.repo, seq: body.seq, rev: body.rev, reason: reasonOf(err) },
      'firehose commit failed verification, skipped',
    )
    return null
  }
}

function isCommitBody(b: Record<string, unknown>): b is CommitBody & Record<string, unknown> {
  return (
    typeof b.repo === 'string' &&
    typeof b.rev === 'string' &&
    b.blocks instanceof Uint8Array &&
    b.commit != null &&
    Array.isArray(b.ops) &&
    b.ops.every((op) => op && typeof op.path === 'string' && typeof op.action === 'string')
  )
}

function collectionOf(path: string): string {
  const slash = path.indexOf('/')
  return slash < 0 ? path : path.slice(0, slash)
}

function opLabel(op: RepoOp): CommitEvent['op'] | 'unknown' {
  const a: string = op.action
  return a === 'create' || a === 'update' || a === 'delete' ? a : 'unknown'
}

/** An event's own time: the frame's, else when it was read (items keep null for the lag). */
function eventUs(timeUs: number | null): number {
  return timeUs ?? steadyNowMs() * 1000
}

function reasonOf(err: unknown): string {
  const e = err as Error & { cause?: unknown }
  const msg = e?.message ?? String(err)
  return e?.cause instanceof Error ? `${msg}: ${e.cause.message}` : msg
}

/** The frame's `time` in µs, or null when it is not a date (never our clock: the lag would lie). */
function toTimeUs(time: unknown): number | null {
  const ms = typeof time === 'string' ? Date.parse(time) : Number.NaN
  return Number.isFinite(ms) ? ms * 1000 : null
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined
}
