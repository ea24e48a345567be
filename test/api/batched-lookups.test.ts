import { sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Database } from '../../src/db/client.ts'
import {
  type PromptKey,
  type PromptRow,
  readPromptAnswers,
  readPromptPage,
} from '../../src/db/read/prompts.ts'
import { createTestDatabase, usingPostgres } from '../helpers/db.ts'
import { apply } from '../helpers/events.ts'
import { readPromptAnswer } from '../helpers/get-prompt.ts'
import { ALICE, BOB, CAROL, makeApp, type Seeded, seed } from './fixtures.ts'

// Lookups that arrive together share one statement (db/read/batch.ts, readPromptAnswers).
// Batching must change nothing a lookup answers: each key gets its own prompt's row, in
// order, a key asked twice gets it twice, and absent or hidden prompts get none. The
// existence flags come from the evidence joins rather than the lists' EXISTS probes, so
// they are checked against those probes row by row.

let db: Database
let s: Seeded
let listed: PromptRow[]

beforeAll(async () => {
  db = await createTestDatabase()
  s = await seed(db)
  // A conversation deleted after its prompt was indexed: the row is still there, deleted.
  await apply(s.deps, [s.w.conversation({ did: BOB, rkey: s.bobRkeys[1], op: 'delete' })])
  listed = await readPromptPage(db, {
    flag: null,
    did: null,
    agent: null,
    sort: 'created',
    after: null,
    take: 500,
  })
})
afterAll(async () => db?.close())

const keyOf = ({ did, rkey }: PromptKey): PromptKey => ({ did, rkey })
const MISSING = { did: ALICE, rkey: '3zzzzzzzzzzzz' }

describe('readPromptAnswers', () => {
  // Left to choose, Postgres planned the lookup afresh on every run (~750 us of a
  // backend's CPU, five times the run itself): statements built once are planned once.
  it.runIf(usingPostgres())(
    'runs statements built once with generic plans, others as chosen',
    async () => {
      const mode = sql`SELECT current_setting('plan_cache_mode') AS mode, ${sql.placeholder('n')}::int AS n`
      expect(await db.read(mode, { n: 1 })).toEqual([{ mode: 'force_generic_plan', n: 1 }])
      expect(await db.read(sql`SELECT current_setting('plan_cache_mode') AS mode`)).toEqual([
        { mode: 'auto' },
      ])
    },
  )

  it('answers each key with its own row, in order, and null where no visible prompt is', async () => {
    const hidden = { did: CAROL, rkey: s.carolRkey }
    const keys = [...listed.map(keyOf), MISSING, hidden, keyOf(listed[0])]
    const rows = await readPromptAnswers(db, keys)
    expect(rows).toHaveLength(keys.length)
    expect(listed.length).toBeGreaterThanOrEqual(18)
    for (const [i, row] of rows.slice(0, listed.length).entries()) {
      expect(row && keyOf(row)).toEqual(keys[i])
      expect(row?.key).toBe(i + 1)
      // A batch answers exactly what a lookup of that key alone answers.
      const alone = await readPromptAnswer(db, keys[i].did, keys[i].rkey)
      expect({ ...row, key: 0 }).toEqual({ ...alone, key: 0 })
    }
    expect(rows.slice(listed.length, -1)).toEqual([null, null])
    expect(rows.at(-1)).toEqual({ ...rows[0], key: keys.length })
  })

  it('reads existence and the conversation evidence as the lists and the tables say', async () => {
    const rows = await readPromptAnswers(db, listed.map(keyOf))
    const stored = await db.rows<{ did: string; rkey: string; deleted: boolean; record: unknown }>(
      sql`SELECT p.did, p.rkey, c.deleted, p.record FROM prompts p
        LEFT JOIN conversations c ON c.did = p.did AND c.rkey = p.rkey`,
    )
    const byKey = new Map(stored.map((r) => [`${r.did} ${r.rkey}`, r]))
    for (const [i, row] of rows.entries()) {
      const list = listed[i]
      expect([row?.conversationExists, row?.agentExists]).toEqual([
        list.conversationExists,
        list.agentExists,
      ])
      const table = byKey.get(`${list.did} ${list.rkey}`)
      expect(row?.conversation_deleted).toBe(table?.deleted ?? null)
      expect(JSON.parse(String(row?.recordJson))).toEqual(table?.record)
    }
    // Every case is there: no conversation, a deleted one, a ghost agent, and the rest.
    const seen = (f: (r: NonNullable<(typeof rows)[number]>) => boolean) =>
      rows.filter((r) => r && f(r)).length
    expect(seen((r) => !r.conversationExists && r.conversation_deleted === null)).toBeGreaterThan(0)
    expect(seen((r) => !r.conversationExists && r.conversation_deleted === true)).toBe(1)
    expect(seen((r) => r.conversationExists)).toBeGreaterThan(10)
    expect(seen((r) => !r.agentExists)).toBeGreaterThan(0)
    expect(seen((r) => r.agentExists)).toBeGreaterThan(10)
  })
})

describe('GET /v1/prompts/{did}/{rkey} under concurrent lookups', () => {
  /** An app over `db` counting the statements built once for a list of keys (the lookups). */
  async function countingApp(): Promise<{ app: FastifyInstance; lookups: () => number }> {
    let lookups = 0
    const counting: Database = {
      ...db,
      read: (q, values?: Record<string, unknown>) => {
        if (values && 'dids' in values) lookups++
        return db.read(q, values)
      },
    }
    return { app: await makeApp(counting), lookups: () => lookups }
  }

  it('answers every request as it would alone, in fewer statements than requests', async () => {
    const urls = [...listed, MISSING, { did: CAROL, rkey: s.carolRkey }, listed[3]].map(
      (k) => `/v1/prompts/${k.did}/${k.rkey}`,
    )
    const together = await countingApp()
    const alone = await makeApp(db)
    try {
      const concurrent = await Promise.all(urls.map((url) => together.app.inject({ url })))
      const statements = together.lookups()
      const sequential = []
      for (const url of urls) sequential.push(await alone.inject({ url }))
      expect(concurrent.map((r) => [r.statusCode, r.body])).toEqual(
        sequential.map((r) => [r.statusCode, r.body]),
      )
      expect(concurrent.filter((r) => r.statusCode === 404)).toHaveLength(2)
      expect(statements).toBeGreaterThan(0)
      expect(statements).toBeLessThanOrEqual(Math.ceil(urls.length / 4))
    } finally {
      await together.app.close()
      await alone.close()
    }
  })
})
