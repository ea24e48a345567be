import type { SourceItem } from '../../model/events.ts'
import { steadyNowMs } from '../../observe/clock.ts'
import { guardSeqFrame, type SeqTrack } from '../cursor-guard.ts'
import type { RefusalReporter } from '../cursor-refusals.ts'
import type { FrameResult } from './frame.ts'

/**
 * The relay's seq decides where a restart resumes, and it sits outside the signed commit:
 * one hostile seq must not become the cursor. Per connection, starting from `track`.
 */
export function createFrameGuard(
  start: SeqTrack,
  refused: RefusalReporter,
): (result: FrameResult) => SourceItem[] {
  let track = start
  return (result) => {
    if (result.seq === null) return result.items
    const g = guardSeqFrame(track, result.seq, result.items, steadyNowMs() * 1000)
    track = g.track
    for (const reason of g.refusals) refused(reason, { seq: result.seq, cursor: track.accepted })
    return g.items
  }
}
