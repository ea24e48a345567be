import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Database } from '../../src/db/client.ts'
import { createTestDatabase } from '../helpers/db.ts'

// db.read's placeholder values (db/client.ts): a statement built once answers each run with
// that run's values, exactly as the same statement with the values written in, whatever the
// column types (timestamps as the same instant; drivers hand them back as text or a Date).

describe('db.read of a statement built once', () => {
  let db: Database
  beforeAll(async () => {
    db = await createTestDatabase()
  })
  afterAll(async () => db?.close())

  it('runs a statement built once with the placeholder values of each call', async () => {
    const once = sql`SELECT ${sql.placeholder('a')}::int + 1 AS n, ${sql.placeholder('b')}::text AS s,
      ${sql.placeholder('b')}::text || ${'!'}::text AS t`
    for (const [a, b] of [
      [1, 'x'],
      [41, 'ünï'],
    ] as const) {
      const [got] = await db.read<Record<string, unknown>>(once, { a, b })
      const [literal] = await db.read<Record<string, unknown>>(
        sql`SELECT ${a}::int + 1 AS n, ${b}::text AS s, ${b}::text || ${'!'}::text AS t`,
      )
      expect(got).toEqual(literal)
      expect(got).toEqual({ n: a + 1, s: b, t: `${b}!` })
    }
  })

  it('reads every type as the statement with its values written in does', async () => {
    const columns = (doc: unknown) => sql`SELECT ${doc}::jsonb::text AS doc,
      42::int AS n, true AS yes, NULL::text AS nothing, 'x'::text AS plain,
      '2026-12-01T00:00:00Z'::timestamptz AS at, ARRAY['p', 'q']::text[] AS xs,
      ${doc}::jsonb AS parsed`
    const doc = '{"a": "ünï 🧠 \\n", "b": [1, 2.5]}'
    const [once] = await db.read<Record<string, unknown>>(columns(sql.placeholder('doc')), {
      doc,
    })
    const [literal] = await db.read<Record<string, unknown>>(columns(doc))
    expect(Object.keys(once)).toEqual(Object.keys(literal))
    expect({ ...once, at: null }).toEqual({ ...literal, at: null })
    expect(new Date(once.at as string).toISOString()).toBe('2026-12-01T00:00:00.000Z')
    expect(new Date(literal.at as string).toISOString()).toBe('2026-12-01T00:00:00.000Z')
    expect(once.doc).toBe('{"a": "ünï 🧠 \\n", "b": [1, 2.5]}')
    expect(once.parsed).toEqual({ a: 'ünï 🧠 \n', b: [1, 2.5] })
    expect(once.xs).toEqual(['p', 'q'])
  })
})
