import { cborDecode, cborDecodeMulti } from '@atproto/common'
import { cborToLex } from '@atproto/repo'
import { parseCommitUnauthenticated } from '@atproto/sync'
import type { Logger } from 'pino'
import type {
  AccountEvent,
  CommitEvent,
  IdentityEvent,
  RepoSnapshotEvent,
} from '../indexer/events.ts'
import type { SourceItem } from '../indexer/sink.ts'
import type { Metrics } from '../metrics.ts'
import type { ChainFrames } from './chain/chain-frames.ts'
import type { DidResolver } from './did-resolver.ts'
import { collectionNeedles, skimUnmatchedCommit } from './frame-skim.ts'
import type { HandleVerifier } from './identity.ts'
import { lexToJson } from './lex-json.ts'
import type { SignatureCheck } from './native-verify.ts'
import { type KeyLookup, parseCommitVerified } from './signature.ts'

// One subscribeRepos frame in, the SourceItems it means out. Kept apart from the socket so
// a benchmark can measure decode, filter and verification on recorded frames.

type CommitBody = Parameters<typeof parseCommitUnauthenticated>[0]
type RepoOp = CommitBody['ops'][number]

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
  /** Where commit signatures are checked (a worker pool); default: inline. */
  checkSignature?: SignatureCheck
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
  const match = (collection: string) => wanted.has(collection)
  const needles = collectionNeedles(opts.collections)
  const { logger, metrics } = opts
  const chain = opts.unauthenticated ? undefined : opts.chain
  const resolveKey: KeyLookup = (did, forceRefresh) =>
    opts.resolver.resolveKey(did, { forceRefresh })
  const countError = (collection: string, op: string) =>
    metrics.eventsTotal.inc({ source: SOURCE, collection, op, outcome: 'error' })

  const commit = async (body: CommitBody, timeUs: number | null): Promise<SourceItem[]> => {
    const seq = body.seq
    const cursorOnly = [{ event: null, cursor: seq, timeUs }]
    const ops = body.ops.filter((op) => match(collectionOf(op.path)))
    if (chain) {
      if (ops.length === 0 && !chain.isTracked(body.repo)) return cursorOnly
      // Tracked from its first wanted commit on, before it is checked: the frames right
      // behind it are skimmed meanwhile, and one skipped commit would break the chain.
      chain.track(body.repo)
      return chain.frames.commit(body, eventUs(timeUs))
    }
    if (ops.length === 0) return cursorOnly
    if (body.tooBig) return sync(body.repo, seq, timeUs)
    let parsed: Awaited<ReturnType<typeof parseCommitUnauthenticated>>
    try {
      if (opts.unauthenticated) parsed = await parseCommitUnauthenticated(body, match)
      else {
        // parseCommitAuthenticated's checks, with the signature verified by OpenSSL.
        parsed = await parseCommitVerified(resolveKey, body, match, opts.checkSignature)
        // With nothing proven there is nothing to trust the rev for; the ops are counted below.
        if (parsed.length > 0)
          checkSignedCommitMatchesFrame(body, parsed[0].blocks.get(body.commit))
      }
    } catch (err) {
      for (const op of ops) countError(collectionOf(op.path), opLabel(op))
      logger.warn(
        { did: body.repo, seq, rev: body.rev, reason: reasonOf(err) },
        'firehose commit failed verification, skipped',
      )
      return cursorOnly
    }
    const items: SourceItem[] = []
    for (const op of ops) {
      const { collection, rkey } = splitPath(op.path)
      const evt = parsed.find((p) => p.collection === collection && p.rkey === rkey)
      const action = opLabel(op)
      if (!evt || action === 'unknown') {
        // @atproto/sync drops ops the MST does not prove, and ops whose record block is absent.
        countError(collection, opLabel(op))
        logger.warn(
          { did: body.repo, seq, path: op.path, action: op.action },
          'firehose op not proven by its commit (or record missing), skipped',
        )
        continue
      }
      const event: CommitEvent = {
        kind: 'commit',
        did: body.repo,
        collection,
        rkey,
        rev: body.rev,
        op: action,
        cid: evt.event === 'delete' ? null : evt.cid.toString(),
        record: evt.event === 'delete' ? null : lexToJson(evt.record),
        timeUs: eventUs(timeUs),
      }
      items.push({ event, cursor: seq, timeUs })
    }
    if (items.length === 0) return cursorOnly
    // Only the last item of a frame completes it: a cursor committed after an earlier item
    // must make a restart replay the whole frame (seq - 1), never skip the rest of it.
    for (let i = 0; i < items.length - 1; i++) items[i].cursor = seq - 1
    return items
  }

  const sync = async (did: string, seq: number, timeUs: number | null): Promise<SourceItem[]> => {
    try {
      if (opts.isKnownDid && !(await opts.isKnownDid(did)))
        return [{ event: null, cursor: seq, timeUs }]
      const snapshot = await opts.fetchSnapshot(did)
      return [{ event: { ...snapshot, timeUs: eventUs(timeUs) }, cursor: seq, timeUs }]
    } catch (err) {
      countError('unknown', 'unknown')
      logger.warn(
        { did, seq, reason: reasonOf(err) },
        'firehose #sync: repo re-fetch failed, skipped',
      )
      return [{ event: null, cursor: seq, timeUs }]
    }
  }

  return async (frame) => {
    const skimmed = skimUnmatchedCommit(frame, needles)
    if (skimmed && !chain?.isTracked(skimmed.repo)) {
      const timeUs = toTimeUs(skimmed.time)
      return { items: [{ event: null, cursor: skimmed.seq, timeUs }], seq: skimmed.seq }
    }
    let header: unknown
    let body: unknown
    try {
      ;[header, body] = cborDecodeMulti(frame)
    } catch (err) {
      countError('unknown', 'unknown')
      logger.warn({ reason: reasonOf(err) }, 'undecodable firehose frame, skipped')
      return { items: [], seq: null }
    }
    const h = (header ?? {}) as { op?: number; t?: string }
    const b = (body ?? {}) as Record<string, unknown>
    if (h.op === -1)
      return { items: [], seq: null, error: { error: String(b.error), message: str(b.message) } }
    if (h.t === '#info')
      return { items: [], seq: null, info: { name: String(b.name), message: str(b.message) } }
    const seq = typeof b.seq === 'number' && Number.isSafeInteger(b.seq) ? b.seq : null
    if (h.op !== 1 || seq === null) {
      countError('unknown', 'unknown')
      logger.warn({ header: h }, 'malformed firehose frame, skipped')
      return { items: [], seq: null }
    }
    const timeUs = toTimeUs(b.time)
    const did = typeof b.did === 'string' ? b.did : ''
    switch (h.t) {
      case '#commit': {
        if (!isCommitBody(b)) break
        return { items: await commit(b, timeUs), seq }
      }
      case '#account': {
        if (!did || typeof b.active !== 'boolean') break
        const status = typeof b.status === 'string' ? b.status : null
        const event: AccountEvent = {
          kind: 'account',
          did,
          active: b.active,
          status,
          seq,
          timeUs: eventUs(timeUs),
        }
        return { items: [{ event, cursor: seq, timeUs }], seq }
      }
      case '#identity': {
        if (!did) break
        if (opts.isKnownDid && !(await opts.isKnownDid(did))) {
          return { items: [{ event: null, cursor: seq, timeUs }], seq }
        }
        const handle = await opts.verifyHandle(did, str(b.handle))
        const event: IdentityEvent = { kind: 'identity', did, handle, seq, timeUs: eventUs(timeUs) }
        return { items: [{ event, cursor: seq, timeUs }], seq }
      }
      case '#sync': {
        if (!did) break
        if (chain) {
          if (typeof b.rev !== 'string' || !(b.blocks instanceof Uint8Array)) break
          if (!chain.isTracked(did)) return { items: [{ event: null, cursor: seq, timeUs }], seq }
          const body = { did, rev: b.rev, blocks: b.blocks, seq }
          return { items: await chain.frames.sync(body, eventUs(timeUs)), seq }
        }
        return { items: await sync(did, seq, timeUs), seq }
      }
      default:
        // A frame type newer than this code: nothing to index, but the cursor moves on.
        return { items: [{ event: null, cursor: seq, timeUs }], seq }
    }
    countError('unknown', h.t === '#commit' ? 'unknown' : (h.t?.slice(1) ?? 'unknown'))
    logger.warn({ seq, type: h.t }, 'malformed firehose message, skipped')
    return { items: [{ event: null, cursor: seq, timeUs }], seq }
  }
}

/**
 * verifyProofs checks the signature of the CAR's root commit; the frame's `commit` and
 * `rev` are plain claims beside it. Tie them together, or a relay could attach any rev (and
 * a rev decides which write wins).
 */
function checkSignedCommitMatchesFrame(body: CommitBody, block: Uint8Array | undefined): void {
  if (!carRoot(body.blocks).equals(body.commit))
    throw new Error('frame commit is not the root of its blocks')
  if (!block) throw new Error('commit block missing')
  const signed = cborToLex(block) as { did?: unknown; rev?: unknown }
  if (signed.did !== body.repo)
    throw new Error(`commit is for ${String(signed.did)}, frame says ${body.repo}`)
  if (signed.rev !== body.rev)
    throw new Error(`commit rev ${String(signed.rev)}, frame says ${body.rev}`)
}

/** The root CID from a CARv1 header (a varint length, then a DAG-CBOR map). */
function carRoot(car: Uint8Array): CommitBody['commit'] {
  let len = 0
  let shift = 0
  let i = 0
  for (;;) {
    const byte = car[i++]
    if (byte === undefined || shift > 28) throw new Error('bad CAR header')
    len |= (byte & 0x7f) << shift
    shift += 7
    if ((byte & 0x80) === 0) break
  }
  const header = cborDecode(car.subarray(i, i + len)) as { roots?: unknown[] }
  const root = header.roots?.[0] as CommitBody['commit'] | undefined
  if (!root || typeof root.equals !== 'function') throw new Error('CAR has no root')
  return root
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

function splitPath(path: string): { collection: string; rkey: string } {
  const slash = path.indexOf('/')
  return { collection: path.slice(0, slash), rkey: path.slice(slash + 1) }
}

function opLabel(op: RepoOp): CommitEvent['op'] | 'unknown' {
  const a: string = op.action
  return a === 'create' || a === 'update' || a === 'delete' ? a : 'unknown'
}

/** The frame's `time` in µs, or null when it is not a date (never our clock: the lag would lie). */
function toTimeUs(time: unknown): number | null {
  const ms = typeof time === 'string' ? Date.parse(time) : Number.NaN
  return Number.isFinite(ms) ? ms * 1000 : null
}

/** An event's own time: the frame's, else when it was read (items keep null for the lag). */
function eventUs(timeUs: number | null): number {
  return timeUs ?? Date.now() * 1000
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined
}

function reasonOf(err: unknown): string {
  const e = err as Error & { cause?: unknown }
  const msg = e?.message ?? String(err)
  return e?.cause instanceof Error ? `${msg}: ${e.cause.message}` : msg
}
