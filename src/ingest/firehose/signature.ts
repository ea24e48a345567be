import { cborEncode } from '@atproto/common'
import {
  type BlockMap,
  cborToLexRecord,
  def,
  formatDataKey,
  MemoryBlockstore,
  MST,
  parseDataKey,
  RepoVerificationError,
  readCarWithRoot,
} from '@atproto/repo'
import type { CommitEvt, parseCommitUnauthenticated } from '@atproto/sync'
import { AtUri } from '@atproto/syntax'
import type { CommitEvent } from '../../model/events.ts'
import { recordJson } from '../lex-json.ts'
import { verifySignatureNative } from './native-verify.ts'

// @atproto/sync's parseCommitAuthenticated with the signature checked by OpenSSL: neither
// library takes a verifier, so verifyProofs/formatCommitOps are rebuilt from their pieces.

/** A `#commit` frame's body, as @atproto/sync types it. */
export type CommitBody = Parameters<typeof parseCommitUnauthenticated>[0]
type RepoOp = CommitBody['ops'][number]
type Cid = NonNullable<RepoOp['cid']>

/** The signing key for a DID; `forceRefresh` when the cached one may have rotated. */
export type KeyLookup = (did: string, forceRefresh: boolean) => Promise<string>

/** @atproto/repo's verifyCommitSig: the signature covers the re-encoded commit minus `sig`. */
function verifyCommitSigNative(commit: { sig: Uint8Array }, didKey: string): boolean {
  const { sig, ...rest } = commit
  return verifySignatureNative(didKey, cborEncode(rest), sig)
}

interface Claim {
  collection: string
  rkey: string
  cid: Cid | null
}

/** @atproto/repo's verifyProofs, returning the CAR's blocks too so they are read once. */
async function verifyProofsNative(proofs: Uint8Array, claims: Claim[], did: string, key: string) {
  const car = await readCarWithRoot(proofs)
  const blockstore = new MemoryBlockstore(car.blocks)
  const commit = await blockstore.readObj(car.root, def.commit)
  if (commit.did !== did) throw new RepoVerificationError(`Invalid repo did: ${commit.did}`)
  if (!verifyCommitSigNative(commit, key))
    throw new RepoVerificationError(`Invalid signature on commit: ${car.root.toString()}`)
  const mst = MST.load(blockstore, commit.data)
  const verified: Claim[] = []
  const signed = { data: commit.data, rev: commit.rev, did: commit.did }
  for (const claim of claims) {
    const found = await mst.get(formatDataKey(claim.collection, claim.rkey))
    // Read even when only its presence matters: a missing record block fails the commit.
    const record = found ? await blockstore.readObj(found, def.map) : null
    if (claim.cid === null ? record === null : found?.equals(claim.cid)) verified.push(claim)
  }
  return { verified, blocks: car.blocks, root: car.root, signed }
}

export interface VerifiedCommit {
  /** Proven ops of matching collections. */
  events: CommitEvt[]
  blocks: BlockMap
  /** The CAR's root (the signed commit block's CID). */
  root: Cid
  /** Fields of the signed commit block. */
  signed: { data: Cid; rev: string; did: string }
}

/** Checks the signature whatever the ops, proves the matching ones, and ties the envelope. */
export async function verifyCommit(
  resolveKey: KeyLookup,
  evt: CommitBody,
  matchCollection: (collection: string) => boolean,
  forceKeyRefresh = false,
): Promise<VerifiedCommit> {
  const did = evt.repo
  const ops = evt.ops.filter((op) => matchCollection(parseDataKey(op.path).collection))
  const claims = ops.map((op): Claim => {
    const { collection, rkey } = parseDataKey(op.path)
    // op.cid as sent (not `?? null`): a create lacking one is judged as the library does.
    return { collection, rkey, cid: op.action === 'delete' ? null : op.cid }
  })
  const key = await resolveKey(did, forceKeyRefresh)
  let proven: Awaited<ReturnType<typeof verifyProofsNative>>
  try {
    proven = await verifyProofsNative(evt.blocks, claims, did, key)
  } catch (err) {
    if (err instanceof RepoVerificationError && !forceKeyRefresh)
      return verifyCommit(resolveKey, evt, matchCollection, true)
    throw err
  }
  checkEnvelope(evt, proven)
  const verifiedCids = new Map<string, Cid | null>()
  for (const c of proven.verified) verifiedCids.set(formatDataKey(c.collection, c.rkey), c.cid)
  const verifiedOps = ops.filter((op) => {
    const cid = verifiedCids.get(op.path)
    if (op.action === 'delete') return cid === null
    return op.cid != null && cid?.equals(op.cid) === true
  })
  return {
    events: formatCommitOps(evt, verifiedOps, proven.blocks),
    blocks: proven.blocks,
    root: proven.root,
    signed: proven.signed,
  }
}

/** The frame's `commit` and `rev` are claims beside the proofs: a rev decides which write wins. */
function checkEnvelope(evt: CommitBody, v: Pick<VerifiedCommit, 'root' | 'signed'>): void {
  if (!v.root.equals(evt.commit)) throw new Error('frame commit is not the root of its blocks')
  if (v.signed.did !== evt.repo)
    throw new Error(`commit is for ${v.signed.did}, frame says ${evt.repo}`)
  if (v.signed.rev !== evt.rev) throw new Error(`commit rev ${v.signed.rev}, frame says ${evt.rev}`)
}

/** @atproto/sync's formatCommitOps over the blocks verifyProofs already read. */
function formatCommitOps(evt: CommitBody, ops: RepoOp[], blocks: BlockMap): CommitEvt[] {
  return ops.flatMap((op): CommitEvt[] => {
    const { seq, time, commit, rev } = evt
    const uri = AtUri.make(evt.repo, op.path)
    const { did, collection, rkey } = uri
    const meta = { seq, time, commit, blocks, rev, uri, did, collection, rkey }
    if (op.action === 'delete') return [{ ...meta, event: 'delete' }]
    // A create or update whose record block is missing is left out.
    const event = op.action === 'create' ? 'create' : op.action === 'update' ? 'update' : null
    const recordBytes = op.cid && blocks.get(op.cid)
    if (!event || !op.cid || !recordBytes) return []
    return [{ ...meta, event, cid: op.cid, record: cborToLexRecord(recordBytes) }]
  })
}

/**
 * The events of a commit's wanted ops; an op its commit does not prove (@atproto/sync drops it,
 * and one whose record block is absent) or whose record JSON cannot hold goes to `skip`.
 */
export function opEvents(
  body: CommitBody,
  proven: CommitEvt[],
  match: (collection: string) => boolean,
  timeUs: number,
  skip: (op: RepoOp, collection: string, reason: string) => void,
  provenance?: CommitEvent['provenance'],
): CommitEvent[] {
  const events: CommitEvent[] = []
  for (const op of body.ops) {
    const slash = op.path.indexOf('/')
    const collection = op.path.slice(0, slash)
    if (!match(collection)) continue
    const rkey = op.path.slice(slash + 1)
    const evt = proven.find((e) => e.collection === collection && e.rkey === rkey)
    if (!evt) {
      skip(op, collection, 'op not proven by its commit (or record missing)')
      continue
    }
    const json = evt.event === 'delete' ? { json: null } : recordJson(evt.record)
    if ('unrepresentable' in json) {
      skip(op, collection, json.unrepresentable)
      continue
    }
    events.push({
      kind: 'commit',
      did: body.repo,
      collection,
      rkey,
      rev: body.rev,
      op: evt.event,
      cid: evt.event === 'delete' ? null : evt.cid.toString(),
      record: json.json,
      timeUs,
      ...(provenance && { provenance }),
    })
  }
  return events
}
