import { CID } from 'multiformats/cid'

/**
 * A decoded CBOR record as lex-JSON: CIDs become `{"$link": …}`, bytes `{"$bytes": …}`
 * (base64, unpadded). One pass instead of @atproto/lexicon's lexToIpld + ipldToJson,
 * because every firehose and backfill record goes through it.
 */
export function lexToJson(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value
  if (Array.isArray(value)) return value.map(lexToJson)
  if (value instanceof Uint8Array) {
    return {
      $bytes: Buffer.from(value.buffer, value.byteOffset, value.byteLength)
        .toString('base64')
        .replace(/=+$/, ''),
    }
  }
  const cid = CID.asCID(value)
  if (cid) return { $link: cid.toString() }
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(value)) out[k] = lexToJson(v)
  return out
}
