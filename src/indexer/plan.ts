import type { Outcome } from '../metrics.ts'
import type { ChainEvent, IndexEvent, Provenance, RepoSnapshotEvent } from './events.ts'
import type { PromptFacts } from './prompt-record.ts'

// The shapes a batch is planned in: what is read of the current state, and the rows,
// history and account changes the plan decides to write.

export type Role = 'prompt' | 'conversation' | 'agent'
export const ROLES: Role[] = ['prompt', 'conversation', 'agent']

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
  /** The revision's texts, when they are strings: kept in revision_texts. */
  content: string | null
  coreMemory: string | null
}

export interface OutcomeCount {
  collection: string
  op: string
  outcome: Outcome
}

export interface LoadedState {
  records: Record<Role, Map<string, StoredRecord>>
  accounts: Map<string, AccountRow>
}

export interface BatchPlan {
  rows: Record<Role, Map<string, RecordRow>>
  /** Keys' agent at-uris before this batch: a prompt leaving a staleness group re-flags it. */
  previousAgentUris: Map<string, string | null>
  revisions: RevisionRow[]
  accounts: Map<string, AccountRow>
  /** DIDs whose visibility differs from before the batch: all their rows change. */
  visibility: Map<string, boolean>
  /** DIDs purged (account status `deleted`) during the batch. */
  purged: Set<string>
  /** The last chain state of each repo the batch moves (Sync 1.1). */
  chains: Map<string, ChainEvent>
  outcomes: OutcomeCount[]
}

export const keyOf = (did: string, rkey: string): string => `${did}\u0000${rkey}`
export const splitKey = (key: string): [string, string] => key.split('\u0000') as [string, string]
export const isVisible = (a: AccountRow): boolean => a.active && !a.operatorHidden

/** An operator takedown from the admin API, applied like any other event. */
export interface OperatorHideEvent {
  kind: 'operator-hide'
  did: string
  hidden: boolean
}
export type BatchEvent = IndexEvent | OperatorHideEvent

/** A verified fetch of the whole repo: the chain continues from the fetched commit. */
export function snapshotChain(
  ev: RepoSnapshotEvent,
  commit: { cid: string; data: string },
): ChainEvent {
  return {
    kind: 'chain',
    did: ev.did,
    rev: ev.rev,
    data: commit.data,
    commit: commit.cid,
    state: 'synchronized',
    reason: null,
    timeUs: ev.timeUs,
  }
}
