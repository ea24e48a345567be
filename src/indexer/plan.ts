import type { ChainEvent, CommitEvent, IndexEvent } from '../model/events.ts'
import type { Role } from '../model/nsids.ts'
import type {
  AccountRow,
  CurrentVersion,
  PromptFacts,
  RecordRow,
  RevisionRow,
  StoredRecord,
} from '../model/rows.ts'
import type { Outcome } from '../observe/metrics.ts'

// The shapes a batch is planned in: what is read of the current state, and the rows,
// history and account changes the plan decides to write.

export interface OutcomeCount {
  collection: string
  op: string
  outcome: Outcome
}

export interface LoadedState {
  records: Record<Role, Map<string, StoredRecord>>
  accounts: Map<string, AccountRow>
  /** Live prompts' current versions, which a new revision's anatomy compares with. */
  versions: Map<string, CurrentVersion>
}

export interface BatchPlan {
  rows: Record<Role, Map<string, RecordRow>>
  /** Keys' agent at-uris before this batch: a prompt leaving a staleness group re-flags it. */
  previousAgentUris: Map<string, string | null>
  revisions: RevisionRow[]
  /** Prompt versions the batch wrote so far: the next write of the same key compares with it. */
  versions: Map<string, CurrentVersion>
  accounts: Map<string, AccountRow>
  /** DIDs whose visibility differs from before the batch: all their rows change. */
  visibility: Map<string, boolean>
  /** DIDs purged (account status `deleted`) during the batch. */
  purged: Set<string>
  /** The last chain state of each repo the batch moves (Sync 1.1). */
  chains: Map<string, ChainEvent>
  outcomes: OutcomeCount[]
}

/** An operator takedown from the admin API, applied like any other event. */
export interface OperatorHideEvent {
  kind: 'operator-hide'
  did: string
  hidden: boolean
}

/**
 * A commit as the indexer queues it: beside the source's event, a prompt write's analysis
 * when it was done as the event was queued (prepare.ts); absent, the batch analyzes it.
 */
export type PreparedCommit = CommitEvent & { analysis?: PromptFacts }

export type BatchEvent = Exclude<IndexEvent, CommitEvent> | PreparedCommit | OperatorHideEvent
