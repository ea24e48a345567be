import { readFileSync } from 'node:fs'
import postgres from 'postgres'
import { describe, expect, it } from 'vitest'
import { usingPostgres } from '../helpers/db.ts'

// The postgres.js the product runs on: the version pinned, and no patch left to apply
// (each fix the 3.4.9 patch carried is in 4.x; their regression tests are
// test/infra/postgres-startup.test.ts and test/cli/db-outage.test.ts). Strings must reach
// the server as exactly their UTF-8 bytes, and every kind of parameter and execution work.

describe('postgres.js driver', () => {
  it('is the pinned version, unpatched', () => {
    const own = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'))
    expect(own.dependencies.postgres).toBe('4.2.0')
    const installed = JSON.parse(
      readFileSync(new URL('../../node_modules/postgres/package.json', import.meta.url), 'utf8'),
    )
    expect(installed.version).toBe('4.2.0')
  })
})

describe.skipIf(!usingPostgres())('string parameters through the driver (Postgres)', () => {
  it('reach the server as their exact UTF-8 bytes, whatever their length and width', async () => {
    const sql = postgres(process.env.TEST_DATABASE_URL as string, { max: 1, onnotice: () => {} })
    try {
      const strings = [
        '',
        'a',
        'plain ascii '.repeat(5000),
        'é',
        'You are an agent — kind.\n'.repeat(2000),
        '😀'.repeat(30_000),
        'mixed ∑ 中文 😀 tab\there',
        'a\ud800b', // a lone surrogate becomes U+FFFD, as Buffer.from gives it
        'x'.repeat(255) + 'é', // across the builder's first 256-byte buffer
      ]
      // Several in one statement, so later parameters land after earlier, larger ones.
      const rows = await sql.unsafe<{ t: string; n: number }[]>(
        strings
          .map((_, i) => `SELECT $${i + 1}::text AS t, octet_length($${i + 1}::text) AS n`)
          .join(' UNION ALL '),
        strings,
      )
      expect(rows.map((r) => r.t)).toEqual(strings.map((s) => Buffer.from(s).toString()))
      expect(rows.map((r) => r.n)).toEqual(strings.map((s) => Buffer.byteLength(s)))
    } finally {
      await sql.end()
    }
  })

  it('bind every kind of parameter, on a new statement, a prepared one and a cursor', async () => {
    const sql = postgres(process.env.TEST_DATABASE_URL as string, { max: 1, onnotice: () => {} })
    try {
      const big = 'memory — block\n'.repeat(40_000) // 600,000 units, 680,000 bytes
      const doc = { words: ['a', 'é'], n: 3, nested: { ok: true } }
      const text = `SELECT $1::text AS a, $2::int AS b, $3::jsonb AS c, $4::text AS d,
        $5::bool AS e, octet_length($1::text) AS n, $6::text[] AS f`
      const args = [big, 42, sql.json(doc), null, true, ['x', 'y,z', '']] as never[]
      const want = { a: big, b: 42, c: doc, d: null, e: true, n: Buffer.byteLength(big) }
      // The first run describes the statement, then binds it (ParameterDescription); the
      // second binds the prepared statement straight away.
      for (let run = 0; run < 2; run++) {
        const [row] = await sql.unsafe(text, args, { prepare: true })
        expect(row, `run ${run}`).toEqual({ ...want, f: ['x', 'y,z', ''] })
      }
      // A cursor's Bind carries Execute with a row count, fetched in parts.
      const parts: number[][] = []
      const wide = 'é'.repeat(70_000)
      const series = sql.unsafe('SELECT g, $1::text AS t FROM generate_series(1, $2::int) g', [
        wide,
        25,
      ] as never[])
      for await (const rows of series.cursor(10)) {
        expect(rows.every((r) => r.t === wide)).toBe(true)
        parts.push(rows.map((r) => r.g))
      }
      expect(parts.map((p) => p.length)).toEqual([10, 10, 5])
      expect(parts.flat()).toEqual(Array.from({ length: 25 }, (_, i) => i + 1))
    } finally {
      await sql.end()
    }
  })
})
