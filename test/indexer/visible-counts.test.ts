import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import type { Database } from '../../src/db/client.ts'
import { countPromptsByFlag } from '../../src/db/read/prompts.ts'
import { readVisibleCounts } from '../../src/db/read/visible-counts.ts'
import { applyBatch } from '../../src/indexer/apply.ts'
import { normalizeJetstreamEvent } from '../../src/ingest/jetstream/event.ts'
import type { IndexEvent } from '../../src/model/events.ts'
import { createTestDatabase } from '../helpers/db.ts'
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
    // The write path of today needs today's schema, so the rows are written on a fully
    // migrated database, the trigger migration is then undone, and its own SQL run again
    // over the rows it finds: the counts must start from them.
    const triggerSql = readdirSync(MIGRATIONS).find((f) => f.includes('visible_counts_triggers'))
    expect(triggerSql).toBeDefined()
    const statements = readFileSync(join(MIGRATIONS, triggerSql!), 'utf8')
      .split('--> statement-breakpoint')
      .filter((st) => st.replace(/--.*$/gm, '').trim() !== '')
    await withDb(async (db) => {
      await applyBatch(indexerDeps(db), events(7, 800), null)
      for (const table of ['prompts', 'conversations', 'agents'])
        for (const op of ['insert', 'update', 'delete', 'truncate'])
          await db.rows(sql.raw(`DROP TRIGGER visible_counts_${op} ON ${table}`))
      await db.rows(sql`DROP FUNCTION visible_counts_prompts(), visible_counts_records()`)
      await db.rows(sql`DELETE FROM visible_counts`)
      for (const st of statements) await db.rows(sql.raw(st))
      const want = await scanned(db)
      expect(want.prompts).toBeGreaterThan(0)
      expect(await readVisibleCounts(db)).toEqual(want)
      // ...and keep them from there.
      await applyBatch(indexerDeps(db), events(8, 400), null)
      expect(await readVisibleCounts(db)).toEqual(await scanned(db))
    })
  }, 120_000)
})
