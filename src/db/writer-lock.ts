import type { Executor } from './client.ts'
import { sql } from './orm.ts'

// Every writer (live ingestion, backfill, admin actions, in any process) takes this lock
// for its whole transaction: state read for the merge stays true until commit, and change
// seqs are assigned and committed in order, so a feed reader never sees n+1 before n.
const WRITER_LOCK = 0x70_61_76_77 // "pavw"

/**
 * Takes the writer lock and sets the batch's session settings, for this transaction only:
 * JIT off, since it compiles longer than a statement runs, and more work_mem so a batch's
 * JSON does not spill to temp files (bench/README.md, "Figures behind the defaults").
 */
export async function beginWriterTransaction(tx: Executor): Promise<void> {
  // Raw: function calls in a SELECT without a table, which the builder has no form for.
  await tx.execute(sql`SELECT pg_advisory_xact_lock(${WRITER_LOCK}),
    set_config('jit', 'off', true), set_config('work_mem', '64MB', true)`)
}
