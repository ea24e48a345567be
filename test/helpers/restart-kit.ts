import { sql } from 'drizzle-orm'
import { type IngestHandle, type Runtime, startIngest } from '../../src/cli/runtime.ts'
import type { Database } from '../../src/db/client.ts'
import type { Source } from '../../src/ingest/source.ts'
import type { Metrics } from '../../src/metrics.ts'
import { testContext } from './context.ts'
import { indexerDeps } from './events.ts'

// For the poisoned-cursor tests: the real start-up path (stored cursor read and checked by
// startIngest), and a digest of the end state to compare a restarted run with an
// uninterrupted one.

/** A Runtime over a test database, as `ingest` opens it (migrated, no server). */
export function testRuntime(db: Database, env: Record<string, string> = {}): Runtime {
  const ctx = testContext(db, { BATCH_DELAY_MS: '0', ...env })
  return {
    ctx,
    deps: indexerDeps(db),
    ready: true,
    newestEventUs: () => null,
    close: async () => {},
  }
}

/** Runs `source` through startIngest until it ends by itself (finite sources). */
export async function ingestToEnd(rt: Runtime, source: Source): Promise<IngestHandle> {
  const handle = await startIngest(rt, source)
  await handle.done
  return handle
}

/**
 * Every visible and deleted record with cid, rev, flags and recompiles, the accounts' handles,
 * and the change feed as a per-uri sequence (seq values may differ between runs, order not).
 */
export async function stateDigest(db: Database): Promise<string[]> {
  const records = await db.rows<{ line: string }>(sql`
    SELECT 'prompt ' || did || '/' || rkey || ' ' || coalesce(cid, '-') || ' ' || rev || ' '
      || flags || ' ' || recompiles || ' ' || deleted || ' ' || hidden AS line FROM prompts
    UNION ALL SELECT 'conversation ' || did || '/' || rkey || ' ' || coalesce(cid, '-') || ' '
      || rev || ' ' || deleted || ' ' || hidden FROM conversations
    UNION ALL SELECT 'agent ' || did || '/' || rkey || ' ' || coalesce(cid, '-') || ' ' || rev
      || ' ' || deleted || ' ' || hidden FROM agents
    UNION ALL SELECT 'account ' || did || ' ' || coalesce(handle, '-') || ' ' || active || ' '
      || coalesce(status, '-') FROM accounts`)
  const changes = await db.rows<{ line: string }>(sql`
    SELECT 'change ' || did || '/' || collection || '/' || rkey || ' '
      || string_agg(op || ':' || coalesce(cid, '-') || ':' || coalesce(flags::text, '-'), ' ' ORDER BY seq) AS line
    FROM changes GROUP BY did, collection, rkey`)
  return [...records, ...changes].map((r) => r.line).sort()
}

export async function storedCursor(
  db: Database,
  source: string,
  key: string,
): Promise<{ cursor: number; lastEventUs: number | null } | null> {
  const rows = await db.rows<{ cursor: string; last_event_us: string | null }>(
    sql`SELECT cursor, last_event_us FROM ingest_cursors WHERE source = ${source} AND key = ${key}`,
  )
  const r = rows[0]
  if (!r) return null
  return {
    cursor: Number(r.cursor),
    lastEventUs: r.last_event_us === null ? null : Number(r.last_event_us),
  }
}

export async function refusals(metrics: Metrics, source: string, reason: string): Promise<number> {
  const got = await metrics.cursorRefusedTotal.get()
  return (
    got.values.find((v) => v.labels.source === source && v.labels.reason === reason)?.value ?? 0
  )
}
