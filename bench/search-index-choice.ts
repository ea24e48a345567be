import { PGlite } from '@electric-sql/pglite'
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm'
import postgres from 'postgres'
import { createRandom } from '../demo-network/random.ts'
import { createCorpus } from '../demo-network/text.ts'

const N = Number(process.env.N ?? 2000)
const rand = createRandom(7)
const corpus = createCorpus(rand, 400_000)
const docs = Array.from({ length: N }, (_, i) => {
  const off = rand.int(0, corpus.length - 12_000)
  return corpus.slice(off, off + 10_000) + ` Conversation: rk${i.toString(36)}zz`
})
type Run = (q: string) => Promise<unknown[]>
async function bench(name: string, run: Run) {
  const t = async (q: string) => {
    const s = performance.now()
    await run(q)
    return performance.now() - s
  }
  const m = async (label: string, q: string) => {
    await t(q)
    const xs = [] as number[]
    for (let i = 0; i < 5; i++) xs.push(await t(q))
    xs.sort((a, b) => a - b)
    return `${label} ${xs[2].toFixed(1)}ms`
  }
  await run(`CREATE TABLE d (rkey text primary key, content text)`)
  for (let i = 0; i < N; i += 200) {
    const vals = docs
      .slice(i, i + 200)
      .map((d, j) => `('${String(i + j).padStart(8, '0')}', '${d.replace(/'/g, "''")}')`)
      .join(',')
    await run(`INSERT INTO d VALUES ${vals}`)
  }
  let s = performance.now()
  await run(
    `ALTER TABLE d ADD COLUMN tsv tsvector GENERATED ALWAYS AS (strip(to_tsvector('simple', content))) STORED`,
  )
  await run(`CREATE INDEX d_tsv ON d USING gin (tsv)`)
  const ftsBuild = performance.now() - s
  s = performance.now()
  await run(`CREATE INDEX d_trgm ON d USING gin (content gin_trgm_ops)`)
  const trgmBuild = performance.now() - s
  await run('ANALYZE d')
  const size = async (ix: string) =>
    ((await run(`SELECT pg_relation_size('${ix}')::bigint AS n`)) as Array<{ n: number }>)[0].n
  const tsvCol = (
    (await run(`SELECT sum(pg_column_size(tsv))::bigint AS n FROM d`)) as Array<{ n: number }>
  )[0].n
  const out = [
    `${name}: ${N} docs of 10 KB`,
    `tsvector: build ${ftsBuild.toFixed(0)} ms (column + GIN), GIN ${await size('d_tsv')} B, column ${tsvCol} B`,
    `pg_trgm: build ${trgmBuild.toFixed(0)} ms, GIN ${await size('d_trgm')} B`,
    await m(
      'tsv rare',
      `SELECT rkey FROM d WHERE tsv @@ plainto_tsquery('simple', 'rk${(N >> 1).toString(36)}zz') ORDER BY rkey DESC LIMIT 50`,
    ),
    await m(
      'tsv common',
      `SELECT rkey FROM d WHERE tsv @@ plainto_tsquery('simple', 'coffee garden') ORDER BY rkey DESC LIMIT 50`,
    ),
    await m(
      'trgm rare',
      `SELECT rkey FROM d WHERE content ILIKE '%rk${(N >> 1).toString(36)}zz%' ORDER BY rkey DESC LIMIT 50`,
    ),
    await m(
      'trgm common',
      `SELECT rkey FROM d WHERE content ILIKE '%coffee%' AND content ILIKE '%garden%' ORDER BY rkey DESC LIMIT 50`,
    ),
  ]
  console.log(out.join('\n  '))
}
const pg = new PGlite({ extensions: { pg_trgm } })
await pg.exec('CREATE EXTENSION pg_trgm')
await bench('PGlite', async (q) => (await pg.query(q)).rows)
await pg.close()
const admin = postgres('postgres://postgres@127.0.0.1:5432/postgres', {
  max: 1,
  onnotice: () => {},
})
await admin.unsafe('DROP DATABASE IF EXISTS i13a_fts_measure')
await admin.unsafe('CREATE DATABASE i13a_fts_measure')
const c = postgres('postgres://postgres@127.0.0.1:5432/i13a_fts_measure', {
  max: 1,
  onnotice: () => {},
})
await c.unsafe('CREATE EXTENSION pg_trgm')
await bench('Postgres 15', async (q) => c.unsafe(q))
await c.end()
await admin.unsafe('DROP DATABASE i13a_fts_measure WITH (FORCE)')
await admin.end()
