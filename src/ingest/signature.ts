import { createPublicKey, type KeyObject, verify } from 'node:crypto'
import { cborEncode } from '@atproto/common'
import { P256_JWT_ALG, parseDidKey, SECP256K1_JWT_ALG } from '@atproto/crypto'
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

// @atproto/sync's parseCommitAuthenticated, with the commit signature checked by OpenSSL
// (node:crypto) instead of @noble/curves: the pure-JS ECDSA verify was nearly all of the
// per-commit cost. Neither @atproto/sync nor @atproto/repo takes a verifier, so their
// verifyProofs/formatCommitOps are reproduced here step for step, from the same library
// pieces, with the same errors: a RepoVerificationError (bad signature, wrong DID) retries
// once with a refreshed key, anything else (bad CAR, malformed key or signature) does not.

type CommitBody = Parameters<typeof parseCommitUnauthenticated>[0]
type RepoOp = CommitBody['ops'][number]
type Cid = NonNullable<RepoOp['cid']>

/** The signing key for a DID; `forceRefresh` when the cached one may have rotated. */
export type KeyLookup = (did: string, forceRefresh: boolean) => Promise<string>

interface Curve {
  crv: 'secp256k1' | 'P-256'
  n: bigint
  halfN: bigint
}

const curve = (crv: Curve['crv'], n: bigint): Curve => ({ crv, n, halfN: n >> 1n })
const CURVES: Record<string, Curve> = {
  [SECP256K1_JWT_ALG]: curve(
    'secp256k1',
    0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n,
  ),
  [P256_JWT_ALG]: curve(
    'P-256',
    0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n,
  ),
}

interface NativeKey {
  key: KeyObject
  curve: Curve
}

// Decoding a did:key decompresses the point in JS (~150 µs); a firehose sees the same few
// authors over and over, so keep the KeyObjects. Insertion order of a Map is the LRU order.
const KEY_CACHE_SIZE = 10_000
const keys = new Map<string, NativeKey>()

function nativeKey(didKey: string): NativeKey {
  const hit = keys.get(didKey)
  if (hit) {
    keys.delete(didKey)
    keys.set(didKey, hit)
    return hit
  }
  // parseDidKey is what verifySignature itself runs first, so a malformed, unsupported or
  // off-curve key throws exactly where and how it does in the library.
  const parsed = parseDidKey(didKey)
  const c = CURVES[parsed.jwtAlg]
  if (!c) throw new Error(`Unsupported signature alg: ${parsed.jwtAlg}`)
  const point = parsed.keyBytes // uncompressed: 0x04 || x || y
  const b64 = (from: number) => Buffer.from(point.subarray(from, from + 32)).toString('base64url')
  const key = createPublicKey({
    key: { kty: 'EC', crv: c.crv, x: b64(1), y: b64(33) },
    format: 'jwk',
  })
  const entry = { key, curve: c }
  keys.set(didKey, entry)
  if (keys.size > KEY_CACHE_SIZE) keys.delete(keys.keys().next().value as string)
  return entry
}

const toBigInt = (bytes: Uint8Array) =>
  BigInt(`0x${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex')}`)

/**
 * @atproto/crypto's `verifySignature(didKey, data, sig)` with default options, on OpenSSL.
 * Same verdicts: only 64-byte compact r||s (DER or any other length throws), r and s in
 * [1, n-1] (else throws), high-S is false (atproto forbids malleable signatures).
 */
export function verifySignatureNative(didKey: string, data: Uint8Array, sig: Uint8Array): boolean {
  const { key, curve: c } = nativeKey(didKey)
  if (!(sig instanceof Uint8Array) || sig.length !== 64)
    throw new Error(`invalid signature: expected 64-byte compact, got ${sig?.length}`)
  const r = toBigInt(sig.subarray(0, 32))
  const s = toBigInt(sig.subarray(32))
  if (r < 1n || r >= c.n) throw new Error('invalid signature r: out of range 1..n-1')
  if (s < 1n || s >= c.n) throw new Error('invalid signature s: out of range 1..n-1')
  if (s > c.halfN) return false
  return verify('sha256', data, { key, dsaEncoding: 'ieee-p1363' }, sig)
}

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
  for (const claim of claims) {
    const found = await mst.get(formatDataKey(claim.collection, claim.rkey))
    // Read even when only its presence matters: a missing record block fails the commit.
    const record = found ? await blockstore.readObj(found, def.map) : null
    if (claim.cid === null ? record === null : found?.equals(claim.cid)) verified.push(claim)
  }
  return { verified, blocks: car.blocks }
}

/**
 * parseCommitAuthenticated(idResolver, evt, matchCollection) with native signature checks:
 * the ops of matching collections that the signed commit's MST proves, as CommitEvts.
 */
export async function parseCommitVerified(
  resolveKey: KeyLookup,
  evt: CommitBody,
  matchCollection: (collection: string) => boolean,
  forceKeyRefresh = false,
): Promise<CommitEvt[]> {
  const did = evt.repo
  const ops = evt.ops.filter((op) => matchCollection(parseDataKey(op.path).collection))
  if (ops.length === 0) return []
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
      return parseCommitVerified(resolveKey, evt, matchCollection, true)
    throw err
  }
  const verifiedCids = new Map<string, Cid | null>()
  for (const c of proven.verified) verifiedCids.set(formatDataKey(c.collection, c.rkey), c.cid)
  const verifiedOps = ops.filter((op) => {
    const cid = verifiedCids.get(op.path)
    if (op.action === 'delete') return cid === null
    return op.cid != null && cid?.equals(op.cid) === true
  })
  return formatCommitOps(evt, verifiedOps, proven.blocks)
}

/** @atproto/sync's formatCommitOps over the blocks verifyProofs already read. */
function formatCommitOps(evt: CommitBody, ops: RepoOp[], blocks: BlockMap): CommitEvt[] {
  const evts: CommitEvt[] = []
  for (const op of ops) {
    const uri = AtUri.make(evt.repo, op.path)
    const meta = {
      seq: evt.seq,
      time: evt.time,
      commit: evt.commit,
      blocks,
      rev: evt.rev,
      uri,
      did: uri.did,
      collection: uri.collection,
      rkey: uri.rkey,
    }
    const action = op.action === 'create' ? 'create' : op.action === 'update' ? 'update' : null
    if (action) {
      if (!op.cid) continue
      const recordBytes = blocks.get(op.cid)
      if (!recordBytes) continue
      evts.push({ ...meta, event: action, cid: op.cid, record: cborToLexRecord(recordBytes) })
    }
    if (op.action === 'delete') evts.push({ ...meta, event: 'delete' })
  }
  return evts
}
