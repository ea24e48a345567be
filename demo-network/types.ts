// Jetstream v1 event shapes (SPEC section 5), as the demo generator writes them.

export type JetstreamOperation = 'create' | 'update' | 'delete'

export interface JetstreamCommitEvent {
  did: string
  time_us: number
  kind: 'commit'
  commit: {
    rev: string
    operation: JetstreamOperation
    collection: string
    rkey: string
    record?: Record<string, unknown>
    cid?: string
  }
}

export interface JetstreamAccountEvent {
  did: string
  time_us: number
  kind: 'account'
  account: { active: boolean; did: string; seq: number; status?: string; time: string }
}

export interface JetstreamIdentityEvent {
  did: string
  time_us: number
  kind: 'identity'
  identity: { did: string; handle: string; seq: number; time: string }
}

export type JetstreamEvent = JetstreamCommitEvent | JetstreamAccountEvent | JetstreamIdentityEvent

export interface GeneratorStats {
  events: number
  byKind: { commit: number; account: number; identity: number }
  /** `collection:operation` -> count */
  commits: Record<string, number>
  /**
   * What the generator deliberately did (`sidecarFirst`, `mismatched:rkey`,
   * `invalid:naiveDatetime`, `takedown`, ...). Intent, not outcome: the reference model
   * says which flags actually result.
   */
  anomalies: Record<string, number>
}
