import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Database } from '../../src/db/client.ts'
import { createTestDatabase } from '../helpers/db.ts'

// db.read's options (db/client.ts ReadOptions). Byte columns (db/raw-rows.ts): on Postgres a
// raw query, so the named columns must come back as exactly the bytes of their text and
// every other column exactly as a normal read parses it, whatever its type; on PGlite the
// same result by another road. Placeholders: a statement built once answers each run with
// that run's values, exactly as the same statement with the values written in.

describe('db.read with byte columns and placeholders', () => {
  let db: Database
  beforeAll(async () => {
    db = await createTestDatabase()
  })
  afterAll(async () => db?.close())

  const query = () => sql`SELECT ${'{"a": "ünï 🧠 \\n", "b": [1, 2.5]}'}::jsonb::text AS doc,
    42::int AS n, 9007199254740993::bigint AS big, true AS yes, NULL::text AS nothing,
    'x'::text AS plain, '2026-12-01T00:00:00Z'::timestamptz AS at, ARRAY['p', 'q']::text[] AS xs,
    ${'{"k": 1}'}::jsonb AS parsed, NULL::text AS absent_bytes`

  it('returns the named columns as the UTF-8 bytes of their text', async () => {
    const [row] = await db.read<Record<string, unknown>>(query(), {
      bytes: new Set(['doc', 'absent_bytes']),
    })
    expect(Buffer.isBuffer(row.doc)).toBe(true)
    const [text] = await db.read<{ doc: string }>(query())
    expect((row.doc as Buffer).equals(Buffer.from(text.doc))).toBe(true)
    expect(text.doc).toBe('{"a": "ünï 🧠 \\n", "b": [1, 2.5]}')
    expect(row.absent_bytes).toBeNull()
  })

  it('parses every other column as a read without byte columns does', async () => {
    const [plain] = await db.read<Record<string, unknown>>(query())
    const [raw] = await db.read<Record<string, unknown>>(query(), { bytes: new Set(['doc']) })
    expect({ ...raw, doc: plain.doc }).toEqual(plain)
    expect(Object.keys(raw)).toEqual(Object.keys(plain))
    expect(raw.n).toBe(42)
    expect(raw.yes).toBe(true)
    expect(raw.at).toBe(plain.at)
    expect(raw.xs).toEqual(['p', 'q'])
    expect(raw.parsed).toEqual({ k: 1 })
  })

  it('runs a statement built once with the placeholder values of each call', async () => {
    const once = sql`SELECT ${sql.placeholder('a')}::int + 1 AS n, ${sql.placeholder('b')}::text AS s,
      ${sql.placeholder('b')}::text || ${'!'}::text AS t`
    for (const [a, b] of [
      [1, 'x'],
      [41, 'ünï'],
    ] as const) {
      const [got] = await db.read<Record<string, unknown>>(once, { values: { a, b } })
      const [literal] = await db.read<Record<string, unknown>>(
        sql`SELECT ${a}::int + 1 AS n, ${b}::text AS s, ${b}::text || ${'!'}::text AS t`,
      )
      expect(got).toEqual(literal)
      expect(got).toEqual({ n: a + 1, s: b, t: `${b}!` })
    }
    const [both] = await db.read<Record<string, unknown>>(once, {
      values: { a: 2, b: 'z' },
      bytes: new Set(['s']),
    })
    expect(both.n).toBe(3)
    expect((both.s as Buffer).toString()).toBe('z')
  })
})
