import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import postgres from 'postgres'
import { describe, expect, it } from 'vitest'
import { usingPostgres } from '../helpers/db.ts'

// postgres.js 3.4.9 kills the process when a deferred write runs after the socket closed
// (test/cli/db-outage.test.ts shows it end to end), or when a new connection's types query
// fails. The fix is patches/postgres+3.4.9.patch, applied by `postinstall` on every npm
// install; this says at once, by name, if an install skipped it (--ignore-scripts) or a
// version bump left the patch behind. The same patch writes each string parameter in one
// pass, reserving 3 bytes a UTF-16 unit instead of measuring it first, stops copying
// each message once more before it is sent, takes a Bind's room in one allocation and
// writes the Execute after it into the same buffer: every string must still reach the server
// as exactly its UTF-8 bytes, and every kind of parameter and of execution still work.

// The package exports no package.json, so it is read from where npm installs it.
const root = fileURLToPath(new URL('../../node_modules/postgres', import.meta.url))

describe('postgres.js driver patch', () => {
  it('is the version the patch is for, and the patch is applied to every build', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
    expect(pkg.version).toBe('3.4.9')
    for (const build of ['src', 'cjs/src', 'cf/src']) {
      const code = readFileSync(join(root, build, 'connection.js'), 'utf8')
      const nextWrite = code.slice(code.indexOf('function nextWrite'))
      expect(nextWrite, build).toMatch(/^function nextWrite\(fn\) \{[^}]*if \(!socket\) \{/)
      // A failed startup types query neither escapes as an unhandled rejection nor
      // carries over to the next socket (test/infra/postgres-startup.test.ts).
      expect(code, build).toContain('return fetchArrayTypes().catch(noop)')
      // Nor does a closed socket's query or last error (test/infra/postgres-startup.test.ts).
      const closed = code.slice(
        code.indexOf('async function closed('),
        code.indexOf('/* Handlers */'),
      )
      expect(closed, build).toMatch(
        /query = errorResponse = null\n\n\s*if \(initial\)\n\s*return reconnect\(\)/,
      )
    }
  })

  it('is applied by postinstall', () => {
    const own = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'))
    expect(own.scripts.postinstall).toMatch(/^patch-package/)
  })
})

describe.skipIf(!usingPostgres())('string parameters through the patched driver (Postgres)', () => {
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
      // A cursor's Bind carries Execute with a row count (the patched tail), fetched in parts.
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
