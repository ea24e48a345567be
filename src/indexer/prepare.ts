import { analyzePrompt } from '../model/prompt-record.ts'
import type { IndexerDeps } from './apply.ts'
import type { BatchEvent } from './plan.ts'

// The part of indexing a prompt that needs no database state (validation, hashing, search
// words, serialization), done as the pipeline queues it so that its CPU overlaps the previous
// batch's transaction instead of running inside the writer lock. A path that never prepares
// (backfill, admin) analyzes in the batch, with the same result.

/** Whether `ev` is a prompt write, the one kind of event that has an analysis. */
function isPromptWrite(
  deps: Pick<IndexerDeps, 'nsids'>,
  ev: BatchEvent,
): ev is BatchEvent & { kind: 'commit' } {
  return ev.kind === 'commit' && ev.collection === deps.nsids.prompt && ev.op !== 'delete'
}

/** `ev` with its analysis when it is a prompt write; any other event as it is. */
export function prepareEvent<E extends BatchEvent>(
  deps: Pick<IndexerDeps, 'nsids' | 'validator'>,
  ev: E,
): E {
  if (!isPromptWrite(deps, ev)) return ev
  return { ...ev, analysis: analyzePrompt(deps.validator, deps.nsids, ev.did, ev.rkey, ev.record) }
}
