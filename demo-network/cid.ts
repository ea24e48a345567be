// CIDs for generated records. Real ones are CIDv1 dag-cbor sha2-256 of the record's DAG-CBOR
// encoding, computed synchronously so the generator can stay a plain iterator.

import { createHash } from 'node:crypto'
import { cborEncode } from '@atproto/common'
import { CID } from 'multiformats/cid'
import * as Digest from 'multiformats/hashes/digest'

const DAG_CBOR = 0x71
const SHA2_256 = 0x12

function cidFromSha256(hash: Uint8Array): string {
  return CID.createV1(DAG_CBOR, Digest.create(SHA2_256, hash)).toString()
}

export function realCid(record: unknown): string {
  return cidFromSha256(createHash('sha256').update(cborEncode(record)).digest())
}

/**
 * A parseable CIDv1 that is not the record's true hash: cheap for huge runs. `key` must
 * change whenever the record does (the generator passes repo, path, rev and a digest).
 */
export function fakeCid(key: string): string {
  return cidFromSha256(createHash('sha256').update(key).digest())
}
