import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator'
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator'
import { describe, expect, it } from 'vitest'
import type { Database } from '../../src/db/client.ts'
import { countPromptsByFlag } from '../../src/db/read/prompts.ts'
import { readVisibleCounts } from '../../src/db/read/visible-counts.ts'
import { applyBatch } from '../../src/indexer/apply.ts'
import { normalizeJetstreamEvent } from '../../src/ingest/jetstream/event.ts'
import type { IndexEvent } from '../../src/model/events.ts'
import { createTestDatabase, usingPostgres } from '../helpers/db.ts'
import { indexerDeps, NSIDS } from '../helpers/events.ts'
import { testTraffic } from '../helpers/traffic.ts'

// /v1/stats and the prompts gauge read visible_counts, which the record tables' triggers
// keep (migration 0011). Checked here against a scan of the tables: after every commit of
// generated traffic (takedowns, purges, flag changes, deletes), after writes that bypass the
// indexer, and when the migration starts the counts on a database that already has rows.

const MIGRATIONS = new URL('../../drizzle/', import.meta.url).pathname
const collections = new Set(Object.values(NSIDS))

/** What the counts must be: a scan of every visible row. */
async function scanned(db: Database) {
  const visible = async (t: string) => {
    const [r] = await db.rows<{ n: number }>(
      sql`SELECT count(*)::int AS n FROM ${sql.raw(t)} WHERE NOT deleted AND NOT hidden`,
    )
    return Number(r.n)
  }
  const prompts = await countPromptsByFlag(db)
  return {
    prompts: prompts.total,
    conversations: await visible('conversations'),
    agents: await visible('agents'),
    flags: prompts.flags,
  }
}

function events(seed: number, n: number): IndexEvent[] {
  const out: IndexEvent[] = []
  for (const line of testTraffic({ seed, dids: 10 }).generate(n)) {
    const r = normalizeJetstreamEvent(line as unknown as string, { collections })
    if (r.ok && r.item.event) out.push(r.item.event)
  }
  return out
}

async function withDb(fn: (db: Database) => Promise<void>) {
  const db = await createTestDatabase()
  try {
    await fn(db)
  } finally {
    await db.close()
  }
}

describe('visible counts kept by triggers', () => {
  it('equal a scan after every commit of generated traffic', async () => {
    await withDb(async (db) => {
      const deps = indexerDeps(db)
      const evs = events(5, 2000)
      const seen = new Set<string>()
      for (let i = 0; i < evs.length; i += 97) {
        await applyBatch(deps, evs.slice(i, i + 97), null)
        const want = await scanned(db)
        expect(await readVisibleCounts(db)).toEqual(want)
        seen.add(JSON.stringify(want))
      }
      // The traffic moved the counts, and it made flags and hid rows along the way.
      expect(seen.size).toBeGreaterThan(10)
      const [{ hidden }] = await db.rows<{ hidden: number }>(
        sql`SELECT count(*) FILTER (WHERE hidden)::int AS hidden FROM prompts`,
      )
      expect(Number(hidden) + (await scanned(db)).flags.orphaned).toBeGreaterThan(0)
    })
  }, 120_000)

  it('count writes that bypass the indexer, deletes and a TRUNCATE', async () => {
    await withDb(async (db) => {
      await applyBatch(indexerDeps(db), events(6, 600), null)
      const before = await scanned(db)
      expect(before.prompts).toBeGreaterThan(0)
      // An operator's hand-written takedown, flag change and delete, one statement each.
      await db.rows(sql`UPDATE prompts SET hidden = true
        WHERE did = (SELECT did FROM prompts WHERE NOT deleted AND NOT hidden LIMIT 1)`)
      await db.rows(sql`UPDATE prompts SET flags = flags | 2 WHERE NOT deleted AND NOT hidden`)
      await db.rows(sql`DELETE FROM conversations
        WHERE rkey IN (SELECT rkey FROM conversations WHERE NOT deleted LIMIT 3)`)
      const after = await scanned(db)
      expect(after.prompts).toBeLessThan(before.prompts)
      expect(after.flags.mismatched).toBe(after.prompts)
      expect(await readVisibleCounts(db)).toEqual(after)
      await db.rows(sql`TRUNCATE prompts`)
      const emptied = await readVisibleCounts(db)
      expect(emptied.prompts).toBe(0)
      expect(emptied).toEqual(await scanned(db))
    })
  }, 60_000)

  it('start from the rows a database already has when the migration runs', async () => {
    // Migrations up to the one before the triggers, rows, then the rest.
    const dir = mkdtempSync(join(tmpdir(), 'pav-migrations-'))
    try {
      cpSync(MIGRATIONS, dir, { recursive: true })
      const journalPath = join(dir, 'meta', '_journal.json')
      const journal = JSON.parse(readFileSync(journalPath, 'utf8'))
      const upTo = journal.entries.findIndex((e: { tag: string }) => e.tag.includes('triggers'))
      expect(upTo).toBeGreaterThan(0)
      writeFileSync(
        journalPath,
        JSON.stringify({ ...journal, entries: journal.entries.slice(0, upTo) }),
      )
      await withDb(async (db) => {
        // createTestDatabase migrated fully: start again from an empty schema.
        await db.rows(sql`DROP SCHEMA public CASCADE`)
        await db.rows(sql`DROP SCHEMA IF EXISTS drizzle CASCADE`)
        await db.rows(sql`CREATE SCHEMA public`)
        const migrate = (folder: string) =>
          usingPostgres()
            ? migratePostgres(db.orm as never, { migrationsFolder: folder })
            : migratePglite(db.orm as never, { migrationsFolder: folder })
        await migrate(dir)
        await applyBatch(indexerDeps(db), events(7, 800), null)
        expect(await db.rows(sql`SELECT * FROM visible_counts`)).toEqual([])
        await migrate(MIGRATIONS)
        const want = await scanned(db)
        expect(want.prompts).toBeGreaterThan(0)
        expect(await readVisibleCounts(db)).toEqual(want)
        // ...and keep them from there.
        await applyBatch(indexerDeps(db), events(8, 400), null)
        expect(await readVisibleCounts(db)).toEqual(await scanned(db))
      })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 120_000)
})
