import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { type LexiconDoc, Lexicons } from '@atproto/lexicon'
import { AtUri, ensureValidDatetime, isValidTid } from '@atproto/syntax'
import { FLAG_BITS, normalizeHash } from '../model/flags.ts'
import type { Nsids } from '../model/nsids.ts'
import type { PromptFacts } from '../model/rows.ts'
import { contentWords } from '../model/search-words.ts'

const LEXICON_PATH = new URL(
  '../../lexicons/xyz/quasigod/lab/letta/compiledPrompt.json',
  import.meta.url,
)
const PUBLISHED_ID = 'xyz.quasigod.lab.letta.compiledPrompt'

/** Validates compiledPrompt records against the published lexicon under the configured NSID. */
export class PromptValidator {
  readonly #lexicons: Lexicons
  readonly #nsid: string
  constructor(promptNsid: string) {
    const doc = JSON.parse(readFileSync(LEXICON_PATH, 'utf8')) as LexiconDoc
    if (doc.id !== PUBLISHED_ID) throw new Error(`unexpected lexicon id ${doc.id}`)
    this.#lexicons = new Lexicons([{ ...doc, id: promptNsid as LexiconDoc['id'] }])
    this.#nsid = promptNsid
  }

  /** Null when valid (SPEC section 2), else a message naming the first problem. */
  validate(rkey: string, record: unknown): string | null {
    if (!isValidTid(rkey)) return `record key ${JSON.stringify(rkey)} is not a TID`
    try {
      this.#lexicons.assertValidRecord(this.#nsid, record)
    } catch (err) {
      return (err as Error).message
    }
    // The lexicon package accepts datetimes without a timezone; the atproto spec does not.
    const compiledAt = (record as { compiledAt: string }).compiledAt
    try {
      ensureValidDatetime(compiledAt)
    } catch (err) {
      return `Record/compiledAt: ${(err as Error).message}`
    }
    return null
  }
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null)

export function analyzePrompt(
  validator: PromptValidator,
  nsids: Nsids,
  did: string,
  rkey: string,
  record: unknown,
): PromptFacts {
  const validationError = validator.validate(rkey, record)
  const r = (record ?? {}) as Record<string, unknown>
  const content = str(r.content)
  const coreMemory = str(r.coreMemory)
  const agentUri = str(r.agent)
  const agent = agentUri ? parseAtUri(agentUri) : null
  const namesAgent = agent !== null && agent.collection === nsids.agent && agent.rkey !== ''
  const compiledAt = str(r.compiledAt)
  const compiledUs = compiledAt ? datetimeToMicros(compiledAt) : null
  const hash = str(r.rawSystemHash)
  let baseFlags = 0
  if (!isSameSlot(str(r.conversation), did, nsids.conversation, rkey))
    baseFlags |= FLAG_BITS.mismatched
  if (content !== null && coreMemory !== null && !content.includes(coreMemory))
    baseFlags |= FLAG_BITS.coreMemoryDetached
  if (validationError) baseFlags |= FLAG_BITS.invalid
  return {
    validationError,
    baseFlags,
    contentBytes: content === null ? null : Buffer.byteLength(content, 'utf8'),
    contentHash: content === null ? null : createHash('sha256').update(content).digest('hex'),
    agentUri,
    agentDid: namesAgent ? agent.host : null,
    agentRkey: namesAgent ? agent.rkey : null,
    rawSystemHash: hash === null ? null : normalizeHash(hash),
    memfsRevision: str(r.memfsRevision),
    compiledAt,
    compiledUs,
    searchWords: contentWords(content),
  }
}

/** Template hash of an agent record: lowercase hex SHA-256 of `system`, if it is a string. */
export function agentTemplateHash(record: unknown): string | null {
  const system = (record as { system?: unknown } | null)?.system
  return typeof system === 'string'
    ? createHash('sha256').update(system, 'utf8').digest('hex')
    : null
}

function parseAtUri(uri: string): AtUri | null {
  try {
    return new AtUri(uri)
  } catch {
    return null
  }
}

/** The `conversation` field must be the at-uri of the prompt's own slot. */
function isSameSlot(uri: string | null, did: string, collection: string, rkey: string): boolean {
  return uri === `at://${did}/${collection}/${rkey}`
}

/**
 * A strict atproto datetime as µs since the epoch; null when it is not one. Instants
 * compare below the millisecond, which Date alone cannot.
 */
export function datetimeToMicros(value: string): number | null {
  try {
    ensureValidDatetime(value)
  } catch {
    return null
  }
  const ms = Date.parse(value)
  if (Number.isNaN(ms)) return null
  const frac = /\.(\d+)/.exec(value)?.[1] ?? ''
  const subMs = Number((frac.slice(3, 6) + '000').slice(0, 3))
  // Date.parse truncates to the millisecond below, so the rest is always added.
  const micros = ms * 1000 + subMs
  return Number.isSafeInteger(micros) ? micros : null
}
