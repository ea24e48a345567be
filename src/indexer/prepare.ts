import { analyzePrompt } from '../model/prompt-record.ts'
import type { IndexerDeps } from './apply.ts'
import type { BatchEvent } from './plan.ts'

// The part of indexing an event that needs no database state: validating a prompt against
// the lexicon, hashing its content, finding its words, serializing it. The pipeline does it as an event is
// queued, which is while the previous batch's transaction runs, so the CPU it costs
// overlaps the database's work instead of being spent inside the writer lock. The batch
// finds the result (analyzePrompt remembers it per record object); a path that never
// prepares (backfill, admin) computes the same facts in the batch, as before.

export function prepareEvent(deps: Pick<IndexerDeps, 'nsids' | 'validator'>, ev: BatchEvent): void {
  if (ev.kind !== 'commit' || ev.collection !== deps.nsids.prompt || ev.op === 'delete') return
  analyzePrompt(deps.validator, deps.nsids, ev.did, ev.rkey, ev.record)
}
