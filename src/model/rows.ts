import type { Anatomy, PromptVersion } from './recompile-anatomy.ts'
import type { RecordParts } from './record-parts.ts'

/** How a record was obtained: stored with it and shown in prompt answers. */
export interface Provenance {
  source: 'firehose' | 'jetstream' | 'backfill' | 'replay'
  /** Signature and MST proof checked. */
  verified: boolean
  /** The commit's CID, when the source names it. */
  commit: string | null
}

// The rows the indexer plans and db/ stores, and the key they are grouped by. Types only,
// plus the few one-line rules both sides apply to them.

export interface StoredRecord {
  rev: string
  cid: string | null
  deleted: boolean
  recompiles: number
  agentUri: string | null
}

export interface RecordRow extends StoredRecord {
  did: string
  rkey: string
  record: unknown
  facts: PromptFacts | null
  /** A live prompt's recompile anatomy against the version before it (SPEC 14). */
  anatomy: Anatomy | null
  templateHash: string | null
  /** Source time (µs) the write arrived with: the "indexed" instant of the evidence rule. */
  timeUs: number
  provenance: Provenance | null
}

export interface AccountRow {
  did: string
  active: boolean
  status: string | null
  handle: string | null
  operatorHidden: boolean
  accountSeq: number | null
  accountUs: number | null
  identitySeq: number | null
  identityUs: number | null
  lastRev: string | null
  purgedRev: string | null
  purgedUs: number | null
}

export interface RevisionRow {
  did: string
  rkey: string
  rev: string
  cid: string
  facts: PromptFacts
  anatomy: Anatomy
  /** The revision's texts, when they are strings: kept in revision_texts. */
  content: string | null
  coreMemory: string | null
}

/** One record's (or one repo text's) key in a batch's maps. */
export const keyOf = (did: string, rkey: string): string => `${did}\u0000${rkey}`
export const splitKey = (key: string): [string, string] => key.split('\u0000') as [string, string]
export const isVisible = (a: AccountRow): boolean => a.active && !a.operatorHidden

/** What the indexer keeps of a prompt beyond the record itself. */
export interface PromptFacts {
  validationError: string | null
  /** mismatched | coreMemoryDetached | invalid: the bits this record decides alone. */
  baseFlags: number
  contentBytes: number | null
  contentHash: string | null
  agentUri: string | null
  agentDid: string | null
  agentRkey: string | null
  rawSystemHash: string | null
  memfsRevision: string | null
  compiledAt: string | null
  compiledUs: number | null
  /** The distinct words of content, for search (see search-words.ts). */
  searchWords: string[]
  /**
   * The record as the write sends it (see record-parts.ts), serialized once as it is
   * analyzed: before the batch's transaction when the pipeline prepares it.
   */
  recordParts: RecordParts
}

/** One stored text of revision_texts (see db/schema.ts): whole, or a delta against `base`. */
export interface TextRow {
  did: string
  hash: string
  base: string | null
  depth: number
  length: number
  body: string
}

/** A live prompt's current version, what the next revision's anatomy compares with. */
export interface CurrentVersion {
  cid: string | null
  version: PromptVersion
  /** Its own anatomy as stored; null for rows indexed before it was kept. */
  anatomy: Anatomy | null
}

/** The prompt's current content, stored as a text of depth `depth`. */
export interface PreviousText {
  content: string
  hash: string
  depth: number
}
