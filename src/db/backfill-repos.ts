import type { Database } from './client.ts'
import { eq, sql } from './orm.ts'
import { backfillRepos } from './schema.ts'

// The backfill's bookkeeping (schema.ts, backfill_repos): a repo is marked done only once
// it is indexed, so a restarted backfill skips exactly the repos already in the index.

/** `backfill --reset`: every repo is fetched again. */
export async function forgetBackfilledRepos(db: Database): Promise<void> {
  await db.orm.delete(backfillRepos)
}

export async function isRepoBackfilled(db: Database, did: string): Promise<boolean> {
  return (await db.orm.$count(backfillRepos, eq(backfillRepos.did, did))) > 0
}

/** Records the rev the repo was indexed at (indexing it again records the new one). */
export async function markRepoBackfilled(db: Database, did: string, rev: string): Promise<void> {
  await db.orm
    .insert(backfillRepos)
    .values({ did, rev, finishedAt: sql`now()` })
    .onConflictDoUpdate({
      target: backfillRepos.did,
      set: { rev: sql`excluded.rev`, finishedAt: sql`excluded.finished_at` },
    })
}
