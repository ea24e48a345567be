import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { type LexiconDoc, Lexicons } from '@atproto/lexicon'
import { AtUri, ensureValidDatetime, isValidTid } from '@atproto/syntax'
import { FLAG_BITS, normalizeHash } from './flags.ts'
import type { Nsids } from './nsids.ts'
import { splitRecord } from './record-parts.ts'
import type { PromptFacts } from './rows.ts'
import { contentWords } from './search-words.ts'

const LEXICON_PATH = new URL(
  '../../lexicons/xyz/quasigod/lab/letta/compiledPrompt.json',
  import.meta.url,
)
const PUBLISHED_ID = 'xyz.quasigod.lab.letta.compiledPrompt'
/** The largest encoding buffer a validator keeps: room for any valid prompt's content. */
const SCRATCH_MAX = 1 << 20

/**
 * Validates compiledPrompt records against the published lexicon under the configured NSID;
 * one per process (the context's), holding the compiled lexicon and a reused encoding buffer.
 */
export class PromptValidator {
  readonly #lexicons: Lexicons
  readonly #nsid: string
  /** Where a content's UTF-8 is written to be counted and hashed (see utf8). */
  #scratch = Buffer.allocUnsafeSlow(64 * 1024)
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

  /**
   * The UTF-8 bytes of `text`, valid until the next call: encoded once into a kept buffer
   * so it is counted and hashed without a fresh allocation per prompt.
   */
  utf8(text: string): Buffer {
    // A UTF-16 unit is at most 3 bytes of UTF-8. An outsized text (no valid prompt is over
    // 200,000 bytes) is encoded on its own, so the kept buffer stays small.
    const room = text.length * 3
    if (room > SCRATCH_MAX) return Buffer.from(text, 'utf8')
    if (this.#scratch.length < room) this.#scratch = Buffer.allocUnsafeSlow(room)
    return this.#scratch.subarray(0, this.#scratch.write(text, 0, 'utf8'))
  }
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null)

/** What the indexer keeps of a prompt record; the same inputs give the same facts. */
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
  const compiledAt = str(r.compiledAt)
  const hash = str(r.rawSystemHash)
  let baseFlags = validationError ? FLAG_BITS.invalid : 0
  // The `conversation` field must be the at-uri of the prompt's own slot.
  if (str(r.conversation) !== `at://${did}/${nsids.conversation}/${rkey}`)
    baseFlags |= FLAG_BITS.mismatched
  if (content !== null && coreMemory !== null && !content.includes(coreMemory))
    baseFlags |= FLAG_BITS.coreMemoryDetached
  const bytes = content === null ? null : validator.utf8(content)
  return {
    validationError,
    baseFlags,
    contentBytes: bytes === null ? null : bytes.length,
    contentHash: bytes === null ? null : createHash('sha256').update(bytes).digest('hex'),
    ...agentOf(str(r.agent), nsids),
    rawSystemHash: hash === null ? null : normalizeHash(hash),
    memfsRevision: str(r.memfsRevision),
    compiledAt,
    compiledUs: compiledAt ? datetimeToMicros(compiledAt) : null,
    searchWords: contentWords(content),
    recordParts: splitRecord(record),
  }
}

/** The `agent` field, and the agent record it names when it is an at-uri of one. */
function agentOf(
  agentUri: string | null,
  nsids: Nsids,
): Pick<PromptFacts, 'agentUri' | 'agentDid' | 'agentRkey'> {
  const agent = agentUri ? parseAtUri(agentUri) : null
  const namesAgent = agent !== null && agent.collection === nsids.agent && agent.rkey !== ''
  return {
    agentUri,
    agentDid: namesAgent ? agent.host : null,
    agentRkey: namesAgent ? agent.rkey : null,
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
