import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { zstdCompressSync } from 'node:zlib'
import { sql } from 'drizzle-orm'
import { afterAll, describe, expect, it } from 'vitest'
import { MIGRATIONS_DIR, openDatabase } from '../../src/db/client.ts'
import { extractTemplate, readTemplate, TEMPLATE_FILE } from '../../src/db/pglite-template.ts'
import { DataDirError } from '../../src/faults/errors.ts'

// A first start fills its PGlite directory from the shipped template instead of running
// initdb (src/db/pglite-template.ts); what it must do with directories that are not what
// it expects, and with a template that is damaged.

const root = mkdtempSync(join(tmpdir(), 'pav-template-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))
let n = 0
const freshDir = () => join(root, `d${++n}`)

const journal = JSON.parse(readFileSync(join(MIGRATIONS_DIR, 'meta/_journal.json'), 'utf8'))
/** When drizzle-kit generated a migration: the journal's `when`, the applied row's created_at. */
const migrationTime = (tag: string): number =>
  (journal.entries as Array<{ tag: string; when: number }>).find((e) => e.tag === tag)?.when ??
  Number.NaN

describe('the shipped PGlite template', () => {
  it('holds every migration of drizzle/ (else: npm run db:template)', async () => {
    const db = await openDatabase({ url: null, dataDir: null })
    try {
      const [{ n }] = await db.rows<{ n: number }>(
        sql`SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations`,
      )
      expect(n, 'the template is older than drizzle/: run npm run db:template').toBe(
        journal.entries.length,
      )
      expect(await db.isMigrated()).toBe(true)
    } finally {
      await db.close()
    }
  })

  it('fills a new data directory, which then opens as it is, with the buffer pool asked for', async () => {
    const dir = freshDir()
    const first = await openDatabase({ url: null, dataDir: dir, sharedBuffers: '4MB' })
    expect(await first.isMigrated()).toBe(true)
    expect(await first.rows(sql`SHOW shared_buffers`)).toEqual([{ shared_buffers: '4MB' }])
    await first.rows(sql`CREATE TABLE kept (x int)`)
    await first.close()
    expect(existsSync(join(dir, 'pgdata', 'PG_VERSION'))).toBe(true)
    expect(existsSync(join(dir, 'pgdata.loading'))).toBe(false)
    const again = await openDatabase({ url: null, dataDir: dir })
    try {
      expect(await again.rows(sql`SELECT to_regclass('kept') IS NOT NULL AS kept`)).toEqual([
        { kept: true },
      ])
      expect(await again.rows(sql`SHOW shared_buffers`)).toEqual([{ shared_buffers: '8MB' }])
    } finally {
      await again.close()
    }
  })

  it('fills again a directory whose filling a start did not finish', async () => {
    const dir = freshDir()
    mkdirSync(join(dir, 'pgdata'), { recursive: true })
    writeFileSync(join(dir, 'pgdata', 'PG_VERSION'), '18\n') // half-written: no catalog
    writeFileSync(join(dir, 'pgdata.loading'), '')
    const db = await openDatabase({ url: null, dataDir: dir })
    try {
      expect(await db.isMigrated()).toBe(true)
      expect(existsSync(join(dir, 'pgdata.loading'))).toBe(false)
    } finally {
      await db.close()
    }
  })

  it('refuses a directory that is not PGlite’s, naming it, and leaves it as it was', async () => {
    const dir = freshDir()
    mkdirSync(join(dir, 'pgdata'), { recursive: true })
    writeFileSync(join(dir, 'pgdata', 'notes.txt'), 'mine')
    const err = await openDatabase({ url: null, dataDir: dir }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(DataDirError)
    expect((err as Error).message).toContain(
      `${join(dir, 'pgdata')} is not a PGlite data directory`,
    )
    expect(readFileSync(join(dir, 'pgdata', 'notes.txt'), 'utf8')).toBe('mine')
    // The lock went with the failed open: another try gets the same answer, not "in use".
    await expect(openDatabase({ url: null, dataDir: dir })).rejects.toBeInstanceOf(DataDirError)
  })

  it('names a damaged data directory', async () => {
    const dir = freshDir()
    const db = await openDatabase({ url: null, dataDir: dir })
    await db.close()
    writeFileSync(join(dir, 'pgdata', 'global', 'pg_control'), 'not a control file')
    const err = await openDatabase({ url: null, dataDir: dir }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(DataDirError)
    expect((err as Error).message).toContain(`PGlite could not open ${join(dir, 'pgdata')}`)
  })

  it('names a damaged template, and the way to rebuild it', () => {
    const bad = join(root, 'bad-template.tar.zst')
    writeFileSync(bad, readFileSync(TEMPLATE_FILE).subarray(0, 1000))
    expect(() => readTemplate(bad)).toThrow(DataDirError)
    expect(() => readTemplate(bad)).toThrow(`the PGlite template ${bad} cannot be read`)
    expect(() => readTemplate(bad)).toThrow(/npm run db:template/)
  })

  it('names a template whose tar is damaged when it fills a directory', () => {
    const bad = join(root, 'bad-tar.tar.zst')
    writeFileSync(bad, zstdCompressSync(Buffer.alloc(4096, 7)))
    const dir = freshDir()
    expect(() => extractTemplate(join(dir, 'pgdata'), bad)).toThrow(
      `the PGlite template ${bad} cannot be read`,
    )
  })

  it('fills a new directory with the files PGlite itself would load', () => {
    const dir = join(freshDir(), 'pgdata')
    extractTemplate(dir)
    expect(readFileSync(join(dir, 'PG_VERSION'), 'utf8').trim()).toMatch(/^\d+$/)
    expect(existsSync(join(dir, 'global', 'pg_control'))).toBe(true)
    expect(existsSync(join(dir, 'pg_wal', 'archive_status'))).toBe(true)
  })

  it('migrates a directory of an older schema forward (one from before migration 0014)', async () => {
    const dir = freshDir()
    const first = await openDatabase({ url: null, dataDir: dir })
    // What a directory filled before 0014 holds: none of what 0014-0016 add (the anatomy
    // columns, the list orders' indexes, backfill_runs), and none of them in the journal.
    await first.rows(sql`DROP TABLE backfill_runs`)
    for (const order of ['compiled', 'indexed', 'recompiles', 'size'])
      await first.rows(sql.raw(`DROP INDEX prompts_${order}_page_idx`))
    await first.rows(sql`ALTER TABLE changes DROP COLUMN changed`)
    await first.rows(sql`ALTER TABLE prompts DROP COLUMN changed, DROP COLUMN memory_files`)
    await first.rows(
      sql`ALTER TABLE prompt_revisions DROP COLUMN changed, DROP COLUMN memory_files`,
    )
    await first.rows(
      sql`DELETE FROM drizzle.__drizzle_migrations WHERE created_at >= ${migrationTime('0014_recompile_anatomy')}`,
    )
    expect(await first.isMigrated()).toBe(false)
    await first.close()
    const again = await openDatabase({ url: null, dataDir: dir })
    try {
      await again.migrate()
      expect(await again.isMigrated()).toBe(true)
      const cols = await again.rows<{ n: number }>(
        sql`SELECT count(*)::int AS n FROM information_schema.columns WHERE column_name IN ('changed', 'memory_files')`,
      )
      expect(cols).toEqual([{ n: 5 }])
      const added = await again.rows<{ n: number }>(
        sql`SELECT count(*)::int AS n FROM pg_class WHERE relname = 'backfill_runs' OR relname LIKE 'prompts\_%\_page\_idx'`,
      )
      expect(added).toEqual([{ n: 5 }])
    } finally {
      await again.close()
    }
  })
})
