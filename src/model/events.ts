import type { SourceCursor } from './cursor.ts'
import type { Provenance } from './rows.ts'

// Normalized events: every source (Jetstream, firehose, backfill, replay) turns what it
// reads into these, so the indexer never knows where an event came from.

export type CommitOp = 'create' | 'update' | 'delete'

/** One record operation of one commit. `rev` is the commit's rev (a TID). */
export interface CommitEvent {
  kind: 'commit'
  did: string
  collection: string
  rkey: string
  rev: string
  op: CommitOp
  /** Absent on delete. */
  cid: string | null
  /** The record as JSON (lex-json: `$link`, `$bytes`), absent on delete. */
  record: unknown
  /** Source time in microseconds since the epoch. */
  timeUs: number
  /** How the record was obtained (SPEC 4); absent: unknown. */
  provenance?: Provenance
}

export type SyncState = 'synchronized' | 'desynchronized' | 'resyncing'

/**
 * A repo's chain state after a commit, a #sync or a resync decision (Sync 1.1). `rev` and
 * `data` are null when the event only changes the sync state (a break keeps the last good
 * rev and root).
 */
export interface ChainEvent {
  kind: 'chain'
  did: string
  rev: string | null
  data: string | null
  commit: string | null
  state: SyncState
  /** Why it is not synchronized (a chain-break reason), null when synchronized. */
  reason: string | null
  timeUs: number
}

/** `#account`: hosting status. `seq` is the upstream firehose seq when known. */
export interface AccountEvent {
  kind: 'account'
  did: string
  active: boolean
  status: string | null
  seq: number | null
  timeUs: number
}

/** `#identity`: `handle` is already verified both ways by the source, or null. */
export interface IdentityEvent {
  kind: 'identity'
  did: string
  handle: string | null
  seq: number | null
  timeUs: number
}

/**
 * The full state of one repo's indexed collections at `rev` (backfill and `#sync`):
 * records present are upserted, indexed records absent from it are deleted.
 */
export interface RepoSnapshotEvent {
  kind: 'snapshot'
  did: string
  rev: string
  records: Array<{ collection: string; rkey: string; cid: string; record: unknown }>
  /** Records the repo has but JSON cannot hold: counted as errors, their stored rows kept. */
  skipped?: Array<{ collection: string; rkey: string; reason: string }>
  timeUs: number
  /** The fetched commit: its CID and MST root. With it the repo's chain state is set too. */
  commit?: { cid: string; data: string }
  provenance?: Provenance
}

/**
 * The end of a Jetstream v2 `#sync` replacement window: the repo was resynced at `rev` and
 * its records were re-sent as creates at `rev`, so every record still older than `rev` is
 * gone and gets a tombstone (re-created ones already carry `rev` and stay).
 */
export interface RepoPruneEvent {
  kind: 'prune'
  did: string
  rev: string
  timeUs: number
}

export type IndexEvent =
  | CommitEvent
  | AccountEvent
  | IdentityEvent
  | RepoSnapshotEvent
  | RepoPruneEvent
  | ChainEvent

/** Where a batch leaves the source: stored in the same transaction as its writes. */
export interface CursorPosition {
  /** `jetstream`, `firehose` or `replay` */
  source: string
  /** The URL or file the cursor belongs to: cursors of different upstreams never mix. */
  key: string
  cursor: SourceCursor
  /** Source time (µs) of the newest event processed, of any kind; null while none was trusted. */
  lastEventUs: number | null
}

/**
 * One unit read from a source. `event` is null for frames that carry nothing we index
 * (other collections, skipped bad input): they still move the cursor and the lag, when their
 * position passed the source's cursor guard (ingest/cursor-guard.ts).
 */
export interface SourceItem {
  event: IndexEvent | null
  /**
   * The source's own position after this item, of the kind the source counts (cursor.ts);
   * null while no position was accepted yet (the item is applied, the stored cursor stays put).
   */
  cursor: SourceCursor | null
  /** Source time of this item, µs since the epoch; null when refused (not used for the lag). */
  timeUs: number | null
  /** Size of the input it came from (line, message, frame): bounds queues by memory. */
  bytes?: number
}

export interface Sink {
  /** Resolves once the item is queued; while the write queue is full it waits (backpressure). */
  push(item: SourceItem): Promise<void>
}

/** A hole the source knows it left in the stream (backfill needed): /v1/stats and /readyz. */
export interface IngestGap {
  /** `CursorTooOld` (the upstream refused the cursor) or `OutdatedCursor` (it clamped it). */
  reason: string
  at: string
  /** The value of the cursor held when it happened. */
  cursor: number | null
  /** What the upstream said. */
  message: string
  /** What the operator should do. */
  action: string
}
