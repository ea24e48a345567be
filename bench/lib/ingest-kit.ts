import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { openRuntime, type Runtime, startIngest } from '../../src/cli/runtime.ts'
import { loadConfig } from '../../src/config/config.ts'
import type { Database } from '../../src/db/client.ts'
import { saveCursor } from '../../src/db/writes.ts'
import { createJetstreamSource, jetstreamOptionsFromConfig } from '../../src/ingest/jetstream/v1.ts'
import { createJetstreamV2Source } from '../../src/ingest/jetstream/v2.ts'
import { timeCursor } from '../../src/model/cursor.ts'
import type { Sink, SourceItem } from '../../src/model/events.ts'
import { NSIDS } from './traffic.ts'

// The two ways of writing Jetstream traffic that the ingest scenario compares, over the same
// source code: the product (bounded queue, set-based batches in one transaction) and the
// naive pattern (one INSERT ... ON CONFLICT per event, autocommit).

export type Backend = { kind: 'postgres'; url: string } | { kind: 'pglite'; dataDir: string }

export async function openBenchRuntime(
  backend: Backend,
  env: Record<string, string> = {},
): Promise<Runtime> {
  const config = loadConfig(
    {},
    {
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
      ...(backend.kind === 'postgres'
        ? { DATABASE_URL: backend.url }
        : { DATA_DIR: backend.dataDir }),
      ...env,
    },
  )
  return openRuntime(config, { migrate: true })
}

/** A PGlite data directory on disk (the product's embedded default), removed by `cleanup`. */
export function tempDataDir(label: string): { dataDir: string; cleanup: () => void } {
  const dataDir = mkdtempSync(join(tmpdir(), `bench-${label}-`))
  return { dataDir, cleanup: () => rmSync(dataDir, { recursive: true, force: true }) }
}

/**
 * Handle verification without the network: the product checks the DID is indexed (one
 * query), then resolves both ways; here the second step is an instant local answer.
 */
export function localHandleVerifier(db: Database) {
  return async (did: string, claimed: string | null): Promise<string | null> => {
    const known = await db.rows(sql`SELECT 1 FROM accounts WHERE did = ${did}`)
    return known.length > 0 ? claimed : null
  }
}

/** The product's Jetstream source on either wire (v2: subscribeEvents with dictionary zstd). */
export function benchJetstreamSource(rt: Runtime, url: string, wire: 'v1' | 'v2' = 'v1') {
  const o = {
    ...jetstreamOptionsFromConfig(rt.ctx.config),
    url,
    logger: rt.ctx.logger,
    metrics: rt.ctx.metrics,
    verifyHandle: localHandleVerifier(rt.ctx.db),
  }
  return wire === 'v2' ? createJetstreamV2Source(o) : createJetstreamSource(o)
}

export interface RunOutcome {
  elapsedS: number
  /** Non-null events committed (the product) or written (the baseline). */
  events: number
}

/**
 * The product path, as `prompt-appview ingest` runs it: a stored cursor at `fromUs`, then
 * startIngest until every event up to `untilUs` is committed.
 */
export async function runProduct(
  rt: Runtime,
  url: string,
  fromUs: number,
  untilUs: number,
  wire: 'v1' | 'v2' = 'v1',
) {
  // A time_us cursor on either wire: v2 translates it to the first seq witnessed at or after.
  const source = benchJetstreamSource(rt, url, wire)
  await saveCursor(
    rt.ctx.db.orm,
    { source: source.name, key: source.key, cursor: timeCursor(fromUs), lastEventUs: fromUs },
    new Date(),
  )
  const started = performance.now()
  const handle = await startIngest(rt, source)
  await new Promise<void>((resolve, reject) => {
    const tick = setInterval(() => {
      if ((handle.pipeline.newestEventUs ?? 0) >= untilUs) done()
    }, 5)
    const done = () => {
      clearInterval(tick)
      resolve()
    }
    handle.done.then(done, (err) => {
      clearInterval(tick)
      reject(err)
    })
  })
  await handle.stop()
  const elapsedS = (performance.now() - started) / 1000
  return { elapsedS, events: handle.pipeline.committedEvents } satisfies RunOutcome
}

const TABLES: Record<string, string> = {
  [NSIDS.prompt]: 'prompts',
  [NSIDS.conversation]: 'conversations',
  [NSIDS.agent]: 'agents',
}

/** The naive writer: each event its own autocommitted INSERT ... ON CONFLICT, in order. */
export function naiveSink(
  db: Database,
  untilUs: number,
  onDone: () => void,
): Sink & { written: number } {
  const sink = {
    written: 0,
    async push(item: SourceItem): Promise<void> {
      const ev = item.event
      if (ev?.kind === 'commit' && TABLES[ev.collection]) {
        const table = sql.raw(TABLES[ev.collection])
        const deleted = ev.op === 'delete'
        const record = deleted ? null : JSON.stringify(ev.record)
        await db.orm.execute(sql`INSERT INTO ${table} (did, rkey, rev, cid, record, deleted, indexed_at)
          VALUES (${ev.did}, ${ev.rkey}, ${ev.rev}, ${ev.cid}, ${record}::jsonb, ${deleted}, now())
          ON CONFLICT (did, rkey) DO UPDATE SET rev = excluded.rev, cid = excluded.cid,
            record = excluded.record, deleted = excluded.deleted, indexed_at = excluded.indexed_at
          WHERE ${table}.rev <= excluded.rev`)
        sink.written++
      } else if (ev?.kind === 'account') {
        await db.orm.execute(sql`INSERT INTO accounts (did, active, status, account_us, updated_at)
          VALUES (${ev.did}, ${ev.active}, ${ev.status}, ${ev.timeUs}, now())
          ON CONFLICT (did) DO UPDATE SET active = excluded.active, status = excluded.status,
            account_us = excluded.account_us, updated_at = excluded.updated_at`)
        sink.written++
      } else if (ev?.kind === 'identity') {
        await db.orm.execute(sql`INSERT INTO accounts (did, handle, identity_us, updated_at)
          VALUES (${ev.did}, ${ev.handle}, ${ev.timeUs}, now())
          ON CONFLICT (did) DO UPDATE SET handle = excluded.handle,
            identity_us = excluded.identity_us, updated_at = excluded.updated_at`)
        sink.written++
      }
      if (item.timeUs !== null && item.timeUs >= untilUs) onDone()
    },
  }
  return sink
}

/** The baseline over the same source code: Jetstream from `fromUs`, the naive writer. */
export function runBaseline(rt: Runtime, url: string, fromUs: number, untilUs: number) {
  return runSink(rt, url, fromUs, (onDone) => naiveSink(rt.ctx.db, untilUs, onDone))
}

/** Times the bench Jetstream source from `fromUs` into a sink until it calls `onDone`. */
async function runSink(
  rt: Runtime,
  url: string,
  fromUs: number,
  makeSink: (onDone: () => void) => Sink & { written: number },
): Promise<RunOutcome> {
  const source = benchJetstreamSource(rt, url)
  const abort = new AbortController()
  const sink = makeSink(() => abort.abort())
  const started = performance.now()
  await source.run(sink, timeCursor(fromUs), abort.signal)
  const elapsedS = (performance.now() - started) / 1000
  return { elapsedS, events: sink.written }
}

/**
 * A reference, not a baseline: the least a batched writer must do with these bytes on the
 * product's tables. Batches of 1,000 events, one transaction each, one INSERT ... ON
 * CONFLICT per table from a jsonb batch parameter (as the product sends them), and
 * nothing else: no state read, flags, history, change log or cursor.
 */
export function bulkSink(
  db: Database,
  untilUs: number,
  onDone: () => void,
): Sink & { written: number } {
  let batch = new Map<string, { table: string; row: Record<string, unknown> }>()
  let done = false
  const flush = async () => {
    const byTable = new Map<string, Record<string, unknown>[]>()
    for (const { table, row } of batch.values())
      byTable.set(table, [...(byTable.get(table) ?? []), row])
    batch = new Map()
    await db.orm.transaction(async (tx) => {
      for (const [table, rows] of byTable) {
        const t = sql.raw(table)
        await tx.execute(sql`INSERT INTO ${t} (did, rkey, rev, cid, record, deleted, indexed_at)
          SELECT did, rkey, rev, cid, record, deleted, now() FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
            AS x(did text, rkey text, rev text, cid text, record jsonb, deleted boolean)
          ON CONFLICT (did, rkey) DO UPDATE SET rev = excluded.rev, cid = excluded.cid,
            record = excluded.record, deleted = excluded.deleted, indexed_at = excluded.indexed_at
          WHERE ${t}.rev <= excluded.rev`)
      }
    })
  }
  const sink = {
    written: 0,
    async push(item: SourceItem): Promise<void> {
      if (done) return
      const ev = item.event
      if (ev?.kind === 'commit' && TABLES[ev.collection]) {
        const deleted = ev.op === 'delete'
        batch.set(`${ev.collection} ${ev.did} ${ev.rkey}`, {
          table: TABLES[ev.collection],
          row: {
            did: ev.did,
            rkey: ev.rkey,
            rev: ev.rev,
            cid: ev.cid,
            record: deleted ? null : ev.record,
            deleted,
          },
        })
        sink.written++
      }
      const last = item.timeUs !== null && item.timeUs >= untilUs
      if (batch.size >= 1000 || (last && batch.size > 0)) await flush()
      if (last) {
        done = true
        onDone()
      }
    },
  }
  return sink
}

/** The bulk reference over the same source: see bulkSink. */
export function runBulk(rt: Runtime, url: string, fromUs: number, untilUs: number) {
  return runSink(rt, url, fromUs, (onDone) => bulkSink(rt.ctx.db, untilUs, onDone))
}

/** Indexed outcomes per collection from the runtime's metrics (the correctness check). */
export async function commitOutcomes(rt: Runtime): Promise<Record<string, number>> {
  const got = await rt.ctx.metrics.eventsTotal.get()
  const out: Record<string, number> = {}
  for (const v of got.values) {
    const l = v.labels as Record<string, string>
    if (!['create', 'update', 'delete'].includes(l.op) || v.value === 0) continue
    out[l.outcome] = (out[l.outcome] ?? 0) + v.value
  }
  return out
}
