/** How far a backfill run has got: what its progress line, its stored row and the overview share. */
export interface BackfillCounts {
  /** Repos found so far; final once `listingDone`. */
  listed: number
  listingDone: boolean
  done: number
  /** Already backfilled in an earlier run (isDone). */
  skipped: number
  failed: number
  records: number
}
