// Validity of a compiledPrompt per SPEC section 2, and the value helpers of section 3, for
// the reference model. Written straight from the spec text; speed is not a goal.

import { readFileSync } from 'node:fs'
import { type LexiconDoc, Lexicons } from '@atproto/lexicon'
import { ensureValidDatetime, isValidDatetime, isValidTid } from '@atproto/syntax'

const LEXICON_PATH = new URL(
  '../../lexicons/xyz/quasigod/lab/letta/compiledPrompt.json',
  import.meta.url,
)

/** A validator for the prompt lexicon published under `promptNsid`. */
export function createPromptValidator(
  promptNsid: string,
): (rkey: string, record: unknown) => string | null {
  const doc = JSON.parse(readFileSync(LEXICON_PATH, 'utf8')) as LexiconDoc
  const lexicons = new Lexicons([{ ...doc, id: promptNsid as LexiconDoc['id'] }])
  return (rkey, record) => {
    try {
      // The lexicon: required fields, types, maxLength in UTF-8 bytes, at-uri format.
      lexicons.assertValidRecord(promptNsid, record)
      // @atproto/lexicon accepts a datetime without a timezone; the atproto spec does not.
      ensureValidDatetime((record as { compiledAt: string }).compiledAt)
    } catch (err) {
      return err instanceof Error ? err.message : String(err)
    }
    if (!isValidTid(rkey)) return `record key ${rkey} is not a TID`
    return null
  }
}

/**
 * A strict atproto datetime as nanoseconds since the epoch, or null. Exact beyond the
 * millisecond, so instants are compared as instants, not as strings or rounded Dates.
 */
export function instantNs(value: unknown): bigint | null {
  if (typeof value !== 'string' || !isValidDatetime(value)) return null
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/.exec(value)
  if (!m) return null
  const ms = Date.parse(`${m[1]}${m[3]}`)
  if (Number.isNaN(ms)) return null
  const fraction = (m[2] ?? '').padEnd(9, '0').slice(0, 9)
  return BigInt(ms) * 1_000_000n + BigInt(fraction)
}

/** Lowercase, without a `sha256:` prefix; null when not a string. */
export function normalizeHash(value: unknown): string | null {
  if (typeof value !== 'string') return null
  const lower = value.toLowerCase()
  return lower.startsWith('sha256:') ? lower.slice('sha256:'.length) : lower
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
