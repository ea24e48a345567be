import { sql } from 'drizzle-orm'
import { expect } from 'vitest'
import { type IngestHandle, type Runtime, startIngest } from '../../src/cli/runtime.ts'
import { createShutdown } from '../../src/cli/shutdown.ts'
import type { Database } from '../../src/db/client.ts'
import type { Source } from '../../src/ingest/source.ts'
import type { Metrics } from '../../src/observe/metrics.ts'
import { testContext } from './context.ts'

// For the poisoned-cursor tests: the real start-up path (stored cursor read and checked by
// startIngest), and a digest of the end state to compare a restarted run with an
// uninterrupted one.

/** A Runtime over a test database, as `ingest` opens it (migrated, no server). */
export function testRuntime(db: Database, env: Record<string, string> = {}): Runtime {
  const ctx = testContext(db, { BATCH_DELAY_MS: '0', ...env })
  // The test owns the database: nothing is registered to close it here.
  const shutdown = createShutdown(ctx.logger)
  return { ctx, isReady: () => true, shutdown, close: () => shutdown.close() }
}

/** Runs `source` through startIngest until it ends by itself (finite sources). */
export async function ingestToEnd(rt: Runtime, source: Source): Promise<IngestHandle> {
  const handle = await startIngest(rt, source)
  await handle.done
  return handle
}

export interface StateDigest {
  /** Every record (deleted too) with cid, rev, flags, recompiles; accounts with handle, status. */
  records: string[]
  /** Per record key, its changes in seq order (seq values may differ between runs). */
  changes: Map<string, string[]>
}

export async function stateDigest(db: Database): Promise<StateDigest> {
  const records = await db.rows<{ line: string }>(sql`
    SELECT 'prompt ' || did || '/' || rkey || ' ' || coalesce(cid, '-') || ' ' || rev || ' '
      || flags || ' ' || recompiles || ' ' || deleted || ' ' || hidden AS line FROM prompts
    UNION ALL SELECT 'conversation ' || did || '/' || rkey || ' ' || coalesce(cid, '-') || ' '
      || rev || ' ' || deleted || ' ' || hidden FROM conversations
    UNION ALL SELECT 'agent ' || did || '/' || rkey || ' ' || coalesce(cid, '-') || ' ' || rev
      || ' ' || deleted || ' ' || hidden FROM agents
    UNION ALL SELECT 'account ' || did || ' ' || coalesce(handle, '-') || ' ' || active || ' '
      || coalesce(status, '-') FROM accounts`)
  const rows = await db.rows<{ k: string; change: string }>(sql`
    SELECT did || '/' || collection || '/' || rkey AS k,
      op || ':' || coalesce(cid, '-') || ':' || coalesce(flags::text, '-') AS change
    FROM changes ORDER BY seq`)
  const changes = new Map<string, string[]>()
  for (const r of rows) changes.set(r.k, [...(changes.get(r.k) ?? []), r.change])
  return { records: records.map((r) => r.line).sort(), changes }
}

/**
 * The restarted run's end state is the reference run's: the same records, and each record's
 * change sequence a subsequence of the reference's (run with one event per batch, which
 * writes every intermediate change; bigger batches may fold some, never reorder them).
 */
export function expectSameEndState(got: StateDigest, reference: StateDigest): void {
  expect(got.records).toEqual(reference.records)
  for (const [k, seq] of got.changes) {
    const ref = reference.changes.get(k) ?? []
    let i = 0
    for (const c of ref) if (c === seq[i]) i++
    expect({ k, seq, isSubsequence: i === seq.length }).toEqual({ k, seq, isSubsequence: true })
  }
  // A reader of the feed ends where the reference's does: the same last change, except that a
  // record never visible in between (created and hidden in one batch) may have none at all.
  for (const [k, ref] of reference.changes) {
    const last = got.changes.get(k)?.at(-1)
    if (last !== undefined || ref.at(-1)?.startsWith('upsert'))
      expect([k, last]).toEqual([k, ref.at(-1)])
  }
}

export async function storedCursor(
  db: Database,
  source: string,
  key: string,
): Promise<{ kind: string; cursor: number; lastEventUs: number | null } | null> {
  const rows = await db.rows<{ kind: string; cursor: string; last_event_us: string | null }>(
    sql`SELECT kind, cursor, last_event_us FROM ingest_cursors
      WHERE source = ${source} AND key = ${key}`,
  )
  const r = rows[0]
  if (!r) return null
  return {
    kind: r.kind,
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
