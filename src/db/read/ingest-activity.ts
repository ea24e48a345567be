import type { BackfillCounts } from '../../model/backfill-counts.ts'
import { type Database, rows } from '../client.ts'
import { sql } from '../orm.ts'
import { readAgainIfConnectionLost } from '../retry.ts'

// Whether an ingest or a backfill is under way, and how far behind its newest event is, for
// the overview. Ages are taken on the database's clock, the one that stamped `updated_at`.

export interface IngestActivity {
  source: string
  key: string
  /** Seconds since the cursor was last written. */
  idleSeconds: number
  /** Seconds between the newest event indexed and now; null when no event time is known. */
  behindSeconds: number | null
  lastEventAt: string | null
}

interface Row {
  source: string
  key: string
  idle: string | number
  behind: string | number | null
  lastEventUs: string | number | null
}

/** The cursor of `source`/`key` (or the most recently written one), or null when none. */
export async function readIngestActivity(
  db: Database,
  source: string | null,
  key: string | null,
): Promise<IngestActivity | null> {
  const which = source && key ? sql`WHERE source = ${source} AND key = ${key}` : sql``
  const [r] = await readAgainIfConnectionLost(() =>
    rows<Row>(
      db.orm,
      sql`SELECT source, key, last_event_us AS "lastEventUs",
        EXTRACT(EPOCH FROM now() - updated_at) AS idle,
        EXTRACT(EPOCH FROM now()) - last_event_us / 1e6 AS behind
        FROM ingest_cursors ${which} ORDER BY updated_at DESC LIMIT 1`,
    ),
  )
  if (!r) return null
  const lastUs = r.lastEventUs == null ? null : Number(r.lastEventUs)
  return {
    source: r.source,
    key: r.key,
    idleSeconds: Number(r.idle),
    behindSeconds: r.behind == null ? null : Math.max(0, Number(r.behind)),
    lastEventAt: lastUs == null ? null : new Date(lastUs / 1000).toISOString(),
  }
}

type RunRow = Omit<BackfillCounts, 'records'> & { records: string | number }

/**
 * The newest backfill run (db/backfill-runs.ts) not finished and written in the last
 * `activeSeconds`, or null: a run whose process died stops being written and drops out.
 */
export async function readBackfillActivity(
  db: Database,
  activeSeconds: number,
): Promise<BackfillCounts | null> {
  const [r] = await readAgainIfConnectionLost(() =>
    rows<RunRow>(
      db.orm,
      sql`SELECT listed, listing_done AS "listingDone", done, skipped, failed, records
        FROM backfill_runs
        WHERE finished_at IS NULL AND updated_at > now() - make_interval(secs => ${activeSeconds})
        ORDER BY updated_at DESC LIMIT 1`,
    ),
  )
  if (!r) return null
  return { ...r, records: Number(r.records) }
}
