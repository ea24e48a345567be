import { createPublicKey, type KeyObject, verify } from 'node:crypto'
import { P256_JWT_ALG, parseDidKey, SECP256K1_JWT_ALG } from '@atproto/crypto'
import { LRUCache } from 'lru-cache'

// @atproto/crypto's verifySignature on OpenSSL (node:crypto) instead of @noble/curves,
// which was nearly all of a verified commit's cost.

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

// Decoding a did:key decompresses the point in JS, and a firehose sees the same few authors
// over and over, so keep the KeyObjects.
const keys = new LRUCache<string, NativeKey>({ max: 10_000 })

function nativeKey(didKey: string): NativeKey {
  const hit = keys.get(didKey)
  if (hit) return hit
  // parseDidKey is what verifySignature itself runs first, so a malformed, unsupported or
  // off-curve key throws exactly where and how it does in the library.
  const parsed = parseDidKey(didKey)
  const c = CURVES[parsed.jwtAlg]
  if (!c) throw new Error(`Unsupported signature alg: ${parsed.jwtAlg}`)
  const point = parsed.keyBytes // uncompressed: 0x04 || x || y
  const b64 = (from: number) => Buffer.from(point.subarray(from, from + 32)).toString('base64url')
  const jwk = { kty: 'EC', crv: c.crv, x: b64(1), y: b64(33) }
  const key = createPublicKey({ key: jwk, format: 'jwk' })
  const entry = { key, curve: c }
  keys.set(didKey, entry)
  return entry
}

const toBigInt = (bytes: Uint8Array) =>
  BigInt(`0x${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex')}`)

/** @atproto/crypto's `verifySignature` with default options, on OpenSSL: the same verdicts. */
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
