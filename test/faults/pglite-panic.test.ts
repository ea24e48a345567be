import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import pino from 'pino'
import { afterAll, describe, expect, it } from 'vitest'
import { type Database, openDatabase } from '../../src/db/client.ts'
import { isRetryable, storeFaultOf } from '../../src/faults/errors.ts'
import { mountTmpfs, type Tmpfs } from '../helpers/tmpfs.ts'

// PGlite's PANIC, made on purpose: on a disk with no room left, a WAL segment switch needs a
// new 16 MB segment file and fails. Before the guard, the next statement on that instance
// spun the CPU forever (the whole process froze). Now every statement is refused at once as
// a retryable store fault, the data directory is opened again in-process once there is
// room, and what was committed before is all there, then and after a restart.

const BIG = 256 << 20
const probe = await mountTmpfs(1 << 20)
const skip = typeof probe === 'string' ? probe : null
if (typeof probe !== 'string') await probe.destroy()
if (skip) console.warn(`PGlite PANIC test skipped: ${skip}`)

describe.skipIf(skip !== null)('a PGlite PANIC on a full disk', () => {
  let fs: Tmpfs
  let db: Database | null = null
  afterAll(async () => {
    await db?.close()
    await fs?.destroy()
  })

  it('is refused at once, not hung on; the directory opens again in-process once there is room', async () => {
    const mounted = await mountTmpfs(BIG)
    if (typeof mounted === 'string') throw new Error(mounted)
    fs = mounted
    const dataDir = join(fs.dir, 'data')
    const logger = pino({ level: 'silent' })
    db = await openDatabase({ url: null, dataDir, logger, minFreeBytes: 0 })
    await db.migrate()
    await db.transaction(async (tx) => {
      await tx.execute(sql`CREATE TABLE panic_probe (n int)`)
      await tx.execute(sql`INSERT INTO panic_probe SELECT generate_series(1, 100)`)
    })
    await fs.resize(fs.used() + (256 << 10))
    // A switch needs some WAL written since the last one; recycled segments may serve a
    // switch or two, a new one cannot be made.
    let err: unknown = null
    for (let i = 0; i < 5 && err === null; i++)
      err = await db
        .transaction(async (tx) => {
          await tx.execute(sql`CREATE TEMP TABLE IF NOT EXISTS scratch (n int)`)
          await tx.execute(sql`INSERT INTO scratch VALUES (1)`)
          await tx.execute(sql`SELECT pg_switch_wal()`)
        })
        .then(
          () => null,
          (e: unknown) => e,
        )
    expect(storeFaultOf(err), String(err)).toBe('disk_full')
    expect(isRetryable(err)).toBe(true)
    const t0 = performance.now()
    const read = await db.rows(sql`SELECT count(*)::int AS n FROM panic_probe`).catch((e) => e)
    expect(read).toBeInstanceOf(Error)
    expect(String((read as Error).cause ?? read)).toMatch(/PANIC/)
    expect(performance.now() - t0).toBeLessThan(1_000)
    await fs.resize(BIG)
    const count = async () =>
      (await db!.rows<{ n: number }>(sql`SELECT count(*)::int AS n FROM panic_probe`))[0].n
    let n: number | null = null
    for (let i = 0; i < 100 && n === null; i++) {
      n = await count().catch(() => null)
      if (n === null) await new Promise((r) => setTimeout(r, 100))
    }
    expect(n).toBe(100)
    await db.close()
    db = await openDatabase({ url: null, dataDir, logger })
    expect(await count()).toBe(100)
  })
})
