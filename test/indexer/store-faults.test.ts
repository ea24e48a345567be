import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { errorAnswer } from '../../src/api/http-errors.ts'
import { loadConfig } from '../../src/config/config.ts'
import type { Database } from '../../src/db/client.ts'
import { roomCheck } from '../../src/db/pglite-guard.ts'
import { getCursor } from '../../src/db/read/stats.ts'
import {
  isPanic,
  isRetryable,
  isStatementTimeout,
  StoreFaultError,
  storeFaultOf,
} from '../../src/faults/errors.ts'
import { IngestPipeline } from '../../src/indexer/pipeline.ts'
import { timeCursor } from '../../src/model/cursor.ts'
import type { SourceItem } from '../../src/model/events.ts'
import { testContext } from '../helpers/context.ts'
import { createTestDatabase } from '../helpers/db.ts'
import { NSIDS, World } from '../helpers/events.ts'
import { getPrompt } from '../helpers/get-prompt.ts'

// A full disk is a fault of the store, never of the event: every way the two drivers say
// "no space" (and PGlite's PANIC after a failed write) pauses ingestion and is retried; none
// sends an event down the count-and-skip path, and the cursor never passes what was stored.

/** A driver error as postgres.js and PGlite throw it, wrapped as drizzle wraps it. */
function driverError(code: string, o: { severity?: string; message?: string } = {}): Error {
  const cause = Object.assign(new Error(o.message ?? `error ${code}`), {
    code,
    severity: o.severity ?? 'ERROR',
  })
  return new Error('Failed query: INSERT INTO prompts ...\nparams: ...', { cause })
}

describe('storeFaultOf and isRetryable: what is the store fault', () => {
  it('a full disk, in every form the drivers and the file system give it', () => {
    const forms = [
      driverError('53100', { message: 'could not extend file "base/5/16480": No space left' }),
      Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }),
      Object.assign(new Error('EDQUOT: disk quota exceeded'), { code: 'EDQUOT' }),
      driverError('53100', { severity: 'PANIC', message: 'could not write to file "pg_wal/x"' }),
      new StoreFaultError('only 3 MB free', { reason: 'disk_full' }),
    ]
    for (const err of forms) {
      expect(storeFaultOf(err), String(err)).toBe('disk_full')
      expect(isRetryable(err), String(err)).toBe(true)
    }
  })

  it('a PANIC, other resource trouble and a lost server are the store faults of reason database', () => {
    const panic = driverError('24000', {
      severity: 'PANIC',
      message: 'cannot drop active portal ""',
    })
    expect(isPanic(panic)).toBe(true)
    for (const err of [panic, driverError('53200'), driverError('08006'), driverError('57P01')]) {
      expect(storeFaultOf(err), String(err)).toBe('database')
      expect(isRetryable(err), String(err)).toBe(true)
    }
  })

  it('what the data did wrong is not the store fault: it stays permanent', () => {
    for (const code of ['23505', '22P05', '22001', '42P01']) {
      expect(storeFaultOf(driverError(code)), code).toBeNull()
      expect(isRetryable(driverError(code)), code).toBe(false)
      expect(isPanic(driverError(code)), code).toBe(false)
    }
  })

  it('record content that says "No space left on device" is not a full disk', () => {
    // A driver's message quotes the statement's parameters, which carry record content.
    const hostile = driverError('22P05', {
      message: 'No space left on device; Disk quota exceeded',
    })
    expect(storeFaultOf(hostile)).toBeNull()
    expect(isRetryable(hostile)).toBe(false)
  })

  it('a statement cancelled at the read timeout is a 503 the client may retry, said as slow', () => {
    const timeout = driverError('57014', {
      message: 'canceling statement due to statement timeout',
    })
    expect(isStatementTimeout(timeout)).toBe(true)
    expect(errorAnswer(timeout)).toMatchObject({ status: 503, unavailable: true, slow: true })
    expect(errorAnswer(driverError('08006'))).toMatchObject({ status: 503, unavailable: true })
    expect(errorAnswer(driverError('08006')).slow).toBeUndefined()
  })
})

describe('roomCheck', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pav-room-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('refuses a write as disk_full below the free space kept, and says how much is free', async () => {
    const err = await roomCheck(dir, Number.MAX_SAFE_INTEGER)().catch((e: unknown) => e)
    expect(err).toBeInstanceOf(StoreFaultError)
    expect(storeFaultOf(err)).toBe('disk_full')
    expect((err as Error).message).toMatch(/MB free under .*PGLITE_MIN_FREE_MB/)
  })

  it('lets writes through with room to spare, or when no reserve is kept', async () => {
    await expect(roomCheck(dir, 1)()).resolves.toBeUndefined()
    await expect(roomCheck(dir, 0)()).resolves.toBeUndefined()
    await expect(roomCheck(null, 1 << 30)()).resolves.toBeUndefined()
  })
})

describe('the writer against a store that refuses for its own reasons', () => {
  let db: Database
  beforeAll(async () => {
    db = await createTestDatabase()
  })
  afterAll(async () => db?.close())
  const w = new World()

  /**
   * The real database, whose first `failures` write transactions fail with `err` before
   * they start, as a full disk fails them; `paused` records the gauge at each failure.
   */
  function refusing(err: () => Error, failures: number) {
    let left = failures
    const store: Database = {
      ...db,
      orm: db.orm,
      monitor: db.monitor,
      transaction: async (work) => {
        if (left-- > 0) throw err()
        return db.transaction(work)
      },
    }
    return store
  }

  async function runWith(store: Database, events: number) {
    const ctx = testContext(store)
    const logs: Array<{ msg: string; reason?: string }> = []
    const logger = pino({ level: 'info' }, { write: (line: string) => logs.push(JSON.parse(line)) })
    const key = `store-faults-${Math.random().toString(36).slice(2)}`
    const p = new IngestPipeline(
      { ...ctx, logger },
      {
        source: 'replay',
        provenance: 'replay',
        key,
        batchSize: 100,
        batchDelayMs: 1,
        queueSize: 1000,
        cursorIntervalMs: 10,
      },
    )
    const done = p.run()
    const did = `did:plc:storefault${key.slice(-8).padEnd(14, 'a')}`
    const rkeys: string[] = []
    let last: SourceItem | null = null
    for (let i = 0; i < events; i++) {
      const rkey = w.tid()
      rkeys.push(rkey)
      last = {
        event: w.prompt({ did, rkey }),
        cursor: timeCursor(w.tick()),
        timeUs: w.us,
        bytes: 100,
      }
      await p.push(last)
    }
    const pausedDuring = await waitPaused(ctx)
    p.stop()
    await done
    return { ctx, logs, key, did, rkeys, last: last!, pausedDuring }
  }

  /** The ingest_paused gauge's set series while the writer retries. */
  async function waitPaused(ctx: ReturnType<typeof testContext>) {
    for (let i = 0; i < 100; i++) {
      const v = (
        await ctx.metrics.registry.getSingleMetric('prompt_appview_ingest_paused')?.get()
      )?.values
        .filter((x) => x.value === 1)
        .map((x) => String(x.labels.reason))
      if (v && v.length > 0) return v
      await new Promise((r) => setTimeout(r, 5))
    }
    return []
  }

  const outcomes = async (ctx: ReturnType<typeof testContext>, outcome: string) =>
    (await ctx.metrics.eventsTotal.get()).values
      .filter((v) => v.labels.outcome === outcome)
      .reduce((s, v) => s + v.value, 0)

  it('53100 disk_full: pauses (metric, error log), skips nothing, resumes, and the cursor lands on the last event', async () => {
    const r = await runWith(
      refusing(() => driverError('53100'), 3),
      20,
    )
    expect(r.pausedDuring).toEqual(['disk_full'])
    expect(await outcomes(r.ctx, 'error')).toBe(0)
    expect(await outcomes(r.ctx, 'indexed')).toBe(20)
    for (const rkey of r.rkeys) expect(await getPrompt(db, NSIDS, r.did, rkey)).not.toBeNull()
    expect(await getCursor(db, 'replay', r.key)).toBe(r.last.cursor?.value)
    const msgs = r.logs.map((l) => l.msg)
    expect(msgs).not.toContain('batch refused, isolating the bad event')
    expect(
      msgs.some((m) => m.startsWith('ingestion paused: the disk under the database is full')),
    ).toBe(true)
    expect(msgs).toContain('ingestion resumed')
    expect(r.ctx.metrics.store.pause()).toBeNull()
  })

  it('a PANIC after a failed write (24000 on ROLLBACK, as PGlite gave it) never isolates or skips an event', async () => {
    const panic = () =>
      driverError('24000', { severity: 'PANIC', message: 'cannot drop active portal ""' })
    const r = await runWith(refusing(panic, 2), 15)
    expect(r.pausedDuring).toEqual(['database'])
    expect(await outcomes(r.ctx, 'error')).toBe(0)
    expect(await outcomes(r.ctx, 'indexed')).toBe(15)
    expect(r.logs.map((l) => l.msg)).not.toContain('batch refused, isolating the bad event')
    expect(await getCursor(db, 'replay', r.key)).toBe(r.last.cursor?.value)
  })

  it('ENOSPC from the file system and the free-space guard pause the same way', async () => {
    const enospc = () => Object.assign(new Error('ENOSPC: no space left'), { code: 'ENOSPC' })
    const r = await runWith(refusing(enospc, 2), 5)
    expect(r.pausedDuring).toEqual(['disk_full'])
    expect(await outcomes(r.ctx, 'indexed')).toBe(5)
    const guard = () => new StoreFaultError('only 3 MB free', { reason: 'disk_full' })
    const g = await runWith(refusing(guard, 2), 5)
    expect(g.pausedDuring).toEqual(['disk_full'])
    expect(await outcomes(g.ctx, 'indexed')).toBe(5)
  })

  it('a config without the new settings keeps the defaults', () => {
    const c = loadConfig({}, {})
    expect(c.pgliteMinFreeMb).toBe(64)
    expect(c.readTimeoutMs).toBe(5000)
    expect(loadConfig({}, { READ_TIMEOUT_MS: '2500', PGLITE_MIN_FREE_MB: '0' })).toMatchObject({
      readTimeoutMs: 2500,
      pgliteMinFreeMb: 0,
    })
  })
})
