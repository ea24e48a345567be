import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { recordBackfillRun } from '../../src/db/backfill-runs.ts'
import type { Database } from '../../src/db/client.ts'
import { readBackfillActivity } from '../../src/db/read/ingest-activity.ts'
import { createTestDatabase } from '../helpers/db.ts'

// A backfill run's progress as the run writes it (db/backfill-runs.ts) and as the overview
// reads it (db/read/ingest-activity.ts): only a run written lately and not finished is under way.

describe('backfill_runs', () => {
  let db: Database
  beforeAll(async () => {
    db = await createTestDatabase()
  })
  afterAll(async () => db?.close())
  beforeEach(async () => {
    await db.rows(sql`DELETE FROM backfill_runs`)
  })

  const counts = (over: Partial<Parameters<typeof recordBackfillRun>[2]> = {}) => ({
    listed: 10,
    listingDone: false,
    done: 3,
    skipped: 2,
    failed: 1,
    records: 5_000_000_000,
    ...over,
  })
  const stored = () =>
    db.rows<{ id: string; done: number; finished: boolean; sameStart: boolean }>(
      sql`SELECT id, done, finished_at IS NOT NULL AS finished, started_at <= updated_at AS "sameStart"
        FROM backfill_runs ORDER BY started_at`,
    )

  it('reads the newest running run with its counts, and nothing once it is finished', async () => {
    expect(await readBackfillActivity(db, 15)).toBeNull()
    await recordBackfillRun(db, 'run-1', counts({ done: 0, records: 0 }), false)
    await recordBackfillRun(db, 'run-1', counts(), false)
    expect(await readBackfillActivity(db, 15)).toEqual(counts())
    await recordBackfillRun(db, 'run-1', counts({ listingDone: true, done: 7 }), true)
    expect(await readBackfillActivity(db, 15)).toBeNull()
    // One row per run, its start kept from the first write.
    expect(await stored()).toEqual([{ id: 'run-1', done: 7, finished: true, sameStart: true }])
  })

  it('does not report a run that stopped being written (its process died)', async () => {
    await recordBackfillRun(db, 'dead', counts(), false)
    await db.rows(sql`UPDATE backfill_runs SET updated_at = now() - interval '20 seconds'`)
    expect(await readBackfillActivity(db, 15)).toBeNull()
    expect(await readBackfillActivity(db, 60)).toEqual(counts())
    await recordBackfillRun(db, 'alive', counts({ done: 9 }), false)
    expect((await readBackfillActivity(db, 15))?.done).toBe(9)
  })

  it('keeps the newest five runs', async () => {
    for (let i = 1; i <= 7; i++) {
      await recordBackfillRun(db, `run-${i}`, counts({ done: i }), true)
      // Distinct starts, oldest first, whatever the clock's resolution.
      await db.rows(sql`UPDATE backfill_runs SET started_at = started_at - make_interval(secs => ${10 - i})
        WHERE id = ${`run-${i}`}`)
    }
    expect((await stored()).map((r) => r.id)).toEqual(['run-3', 'run-4', 'run-5', 'run-6', 'run-7'])
  })
})
