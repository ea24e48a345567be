import { def, MemoryBlockstore, readCarWithRoot, verifyCommitSig } from '@atproto/repo'
import type { ChainHead } from '../../../db/repo-chain.ts'
import type { ChainEvent } from '../../../model/events.ts'
import { steadyNowMs } from '../../../observe/clock.ts'
import type { KeyLookup } from '../signature.ts'
import { checkRev, stateEvent } from './check-commit.ts'

// `#sync`: "this is the repo's current commit", possibly discontinuous (notes section 6).
// Only a signed commit for this DID and rev counts; an older or equal rev never rolls the
// state back; the same MST root only advances the rev; anything else means our records may
// not be the repo's, so it is re-fetched.

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
