import type { BackfillCounts } from '../model/backfill-counts.ts'
import type { Database } from './client.ts'
import { desc, notInArray, sql } from './orm.ts'
import { backfillRuns } from './schema.ts'

// Each backfill run's progress (schema.ts, backfill_runs), written by the run itself: the
// backfill may be another process than the one whose overview reads it (db/read/ingest-activity.ts).

/** Runs kept: enough to see the last ones, while the table stays a handful of rows. */
const KEEP_RUNS = 5

/**
 * Writes run `id`'s counts (the first write inserts its row), stamped on the database's
 * clock; `finished` marks the run over. Runs beyond the newest few are deleted.
 */
export async function recordBackfillRun(
  db: Database,
  id: string,
  counts: BackfillCounts,
  finished: boolean,
): Promise<void> {
  const { listed, listingDone, done, skipped, failed, records } = counts
  const values = { listed, listingDone, done, skipped, failed, records, updatedAt: sql`now()` }
  const finishedAt = finished ? sql`now()` : null
  await db.orm
    .insert(backfillRuns)
    .values({ id, startedAt: sql`now()`, ...values, finishedAt })
    .onConflictDoUpdate({ target: backfillRuns.id, set: { ...values, finishedAt } })
  const newest = db.orm
    .select({ id: backfillRuns.id })
    .from(backfillRuns)
    .orderBy(desc(backfillRuns.startedAt))
    .limit(KEEP_RUNS)
  await db.orm.delete(backfillRuns).where(notInArray(backfillRuns.id, newest))
}
