import { CID } from 'multiformats/cid'
import { AppError } from '../faults/errors.ts'

/**
 * A record value JSON cannot carry: DAG-CBOR allows integers up to 2^64, which
 * @atproto/repo decodes as a bigint when beyond 2^53. Permanent: the record is counted and
 * skipped, never retried.
 */
class UnrepresentableRecordError extends AppError {}

/**
 * A decoded CBOR record as lex-JSON: CIDs become `{"$link": …}`, bytes `{"$bytes": …}`
 * (base64, unpadded). One pass instead of @atproto/lexicon's lexToIpld + ipldToJson,
 * because every firehose and backfill record goes through it.
 */
function lexToJson(value: unknown): unknown {
  if (typeof value === 'bigint') {
    throw new UnrepresentableRecordError(`integer ${value} is beyond ±2^53: JSON cannot hold it`)
  }
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

/** The record as lex-JSON, or why it cannot be one, for its source to count and skip. */
export function recordJson(value: unknown): { json: unknown } | { unrepresentable: string } {
  try {
    return { json: lexToJson(value) }
  } catch (err) {
    if (err instanceof UnrepresentableRecordError) return { unrepresentable: err.message }
    throw err
  }
}
