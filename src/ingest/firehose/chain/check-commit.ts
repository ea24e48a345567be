import { TID } from '@atproto/common'
import { def, MemoryBlockstore, readCarWithRoot, verifyCommitSig } from '@atproto/repo'
import type { CommitEvt } from '@atproto/sync'
import type { ChainHead } from '../../../db/repo-chain.ts'
import type { ChainEvent } from '../../../model/events.ts'
import type { BreakReason } from '../../../observe/chain-metrics.ts'
import { steadyNowMs } from '../../../observe/clock.ts'
import { type CommitBody, type KeyLookup, type VerifiedCommit, verifyCommit } from '../signature.ts'
import { InversionError, invertCommit } from './invert.ts'

// The Sync 1.1 checks of one #commit of a tracked repo (notes/sync-1.1.md, section 3), cheap
// ones first; inversion is strict, since a resync costs less than serving a hidden delete.

/** A rev this far ahead of our clock is refused (the relay's and atmos's tolerance). */
export const FUTURE_REV_TOLERANCE_MS = 5 * 60 * 1000

export type CommitVerdict =
  | { kind: 'accept'; events: CommitEvt[]; chain: ChainEvent; legacy: boolean }
  /** rev at or below the stored one: a replay, dropped. */
  | { kind: 'replay' }
  /** The repo waits for a resync: its commits are not applied blindly. */
  | { kind: 'waiting'; state: ChainHead['state'] }
  /** A bad commit: dropped, state unchanged, no resync (it would not help). */
  | { kind: 'reject'; reason: 'future_rev' | 'invalid'; detail: string }
  | { kind: 'break'; reason: BreakReason; detail: string; chain: ChainEvent }

export interface CheckDeps {
  resolveKey: KeyLookup
  match: (collection: string) => boolean
  now?: () => number
}

export async function checkCommit(
  deps: CheckDeps,
  body: CommitBody,
  head: ChainHead | null,
  timeUs: number,
): Promise<CommitVerdict> {
  const early = checkRev(body.rev, deps.now?.() ?? steadyNowMs())
  if (early) return early
  if (head && head.state !== 'synchronized') return { kind: 'waiting', state: head.state }
  if (head?.rev && body.rev <= head.rev) return { kind: 'replay' }
  let verified: VerifiedCommit
  try {
    verified = await verifyCommit(deps.resolveKey, body, deps.match)
  } catch (err) {
    return { kind: 'reject', reason: 'invalid', detail: (err as Error).message }
  }
  const chained = await checkChain(body, head, verified)
  if (chained.broken) {
    const { reason, detail } = chained.broken
    const chain = stateEvent(body.repo, 'desynchronized', reason, timeUs)
    return { kind: 'break', reason, detail, chain }
  }
  const chain: ChainEvent = {
    ...stateEvent(body.repo, 'synchronized', null, timeUs),
    rev: body.rev,
    data: verified.signed.data.toString(),
    commit: verified.root.toString(),
  }
  return { kind: 'accept', events: verified.events, chain, legacy: chained.legacy }
}

type Broken = { reason: BreakReason; detail: string }
const broken = (reason: BreakReason, detail: string) => ({ broken: { reason, detail } })

/** The chain checks of a verified commit: since, then prevData, then the inversion. */
async function checkChain(
  body: CommitBody,
  head: ChainHead | null,
  verified: VerifiedCommit,
): Promise<{ broken: Broken; legacy?: never } | { broken?: never; legacy: boolean }> {
  if (body.since && body.since >= body.rev)
    return broken('rev_order', `since ${body.since} is not before rev ${body.rev}`)
  if (!head?.rev || !head.data) return { legacy: false }
  if (body.since !== head.rev)
    return broken('since', `since ${body.since} but the stored rev is ${head.rev}`)
  const prevData = body.prevData
  if (!prevData) {
    if (body.ops.some((op) => op.prev)) return broken('inversion', 'ops carry prev, no prevData')
    return { legacy: true }
  }
  if (prevData.toString() !== head.data)
    return broken('prev_data', `prevData ${prevData} but the stored root is ${head.data}`)
  try {
    const before = await invertCommit(verified.blocks, verified.signed.data, body.ops)
    if (!before.equals(prevData))
      return broken('inversion', `inverted root ${before} is not prevData ${prevData}`)
  } catch (err) {
    if (!(err instanceof InversionError)) throw err
    return broken('inversion', err.message)
  }
  return { legacy: false }
}

export function checkRev(rev: string, nowMs: number): CommitVerdict | null {
  if (!TID.is(rev)) return { kind: 'reject', reason: 'invalid', detail: `rev ${rev} is not a TID` }
  const revMs = TID.fromStr(rev).timestamp() / 1000
  if (revMs > nowMs + FUTURE_REV_TOLERANCE_MS)
    return {
      kind: 'reject',
      reason: 'future_rev',
      detail: `rev ${rev} is ${Math.round((revMs - nowMs) / 1000)} s in the future`,
    }
  return null
}

export function stateEvent(
  did: string,
  state: ChainEvent['state'],
  reason: string | null,
  timeUs: number,
): ChainEvent {
  return { kind: 'chain', did, rev: null, data: null, commit: null, state, reason, timeUs }
}

// `#sync`: "this is the repo's current commit" (notes section 6): a signed commit at a newer
// rev advances the chain on the same MST root, and has the repo re-fetched otherwise.

/** Relays and hydrant accept up to 2 MB; the lexicon says 10,000 bytes. */
const MAX_SYNC_BLOCKS = 2_000_000

export type SyncVerdict =
  | { kind: 'noop' }
  | { kind: 'advance'; chain: ChainEvent }
  | { kind: 'resync'; chain: ChainEvent }
  | { kind: 'unverifiable'; detail: string }
  | { kind: 'future_rev'; detail: string }

export interface SyncBody {
  did: string
  rev: string
  blocks: Uint8Array
}

export async function checkSync(
  resolveKey: KeyLookup,
  body: SyncBody,
  head: ChainHead | null,
  timeUs: number,
  nowMs = steadyNowMs(),
): Promise<SyncVerdict> {
  const early = checkRev(body.rev, nowMs)
  if (early?.kind === 'reject')
    return early.reason === 'future_rev'
      ? { kind: 'future_rev', detail: early.detail }
      : { kind: 'unverifiable', detail: early.detail }
  let signed: { data: string; commit: string }
  try {
    signed = await verifySyncCommit(resolveKey, body)
  } catch (err) {
    return { kind: 'unverifiable', detail: (err as Error).message }
  }
  if (head?.rev && body.rev <= head.rev) return { kind: 'noop' }
  if (head?.state === 'synchronized' && head.data === signed.data) {
    return {
      kind: 'advance',
      chain: { ...stateEvent(body.did, 'synchronized', null, timeUs), rev: body.rev, ...signed },
    }
  }
  return { kind: 'resync', chain: stateEvent(body.did, 'desynchronized', 'sync_event', timeUs) }
}

async function verifySyncCommit(
  resolveKey: KeyLookup,
  body: SyncBody,
): Promise<{ data: string; commit: string }> {
  if (body.blocks.byteLength > MAX_SYNC_BLOCKS)
    throw new Error(`#sync blocks of ${body.blocks.byteLength} bytes`)
  const car = await readCarWithRoot(body.blocks)
  const commit = await new MemoryBlockstore(car.blocks).readObj(car.root, def.commit)
  if (commit.did !== body.did)
    throw new Error(`commit is for ${commit.did}, frame says ${body.did}`)
  if (commit.rev !== body.rev) throw new Error(`commit rev ${commit.rev}, frame says ${body.rev}`)
  let ok = await verifyCommitSig(commit, await resolveKey(body.did, false))
  // The key may have rotated since it was cached: one more try with a fresh one.
  if (!ok) ok = await verifyCommitSig(commit, await resolveKey(body.did, true))
  if (!ok) throw new Error(`invalid signature on #sync commit ${car.root}`)
  return { data: commit.data.toString(), commit: car.root.toString() }
}
