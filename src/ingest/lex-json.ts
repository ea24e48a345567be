import { CID } from 'multiformats/cid'
import { AppError } from '../faults/errors.ts'

/** An integer beyond 2^53 (a bigint from DAG-CBOR): JSON cannot carry it; never retried. */
class UnrepresentableRecordError extends AppError {}

/** A decoded record as lex-JSON in one pass (every firehose and backfill record goes through it). */
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
