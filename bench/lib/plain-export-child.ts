import { once } from 'node:events'
import { createWriteStream } from 'node:fs'
import postgres from 'postgres'

// The export bench's baseline: the visible prompts read with a postgres.js cursor and
// written as one JSON line each, no features. argv: database URL, output file.

const [url, file] = process.argv.slice(2)
const sql = postgres(url, { max: 1, onnotice: () => {} })
const out = createWriteStream(file)
let n = 0
await sql`SELECT did, rkey, cid, rev, record, flags, recompiles, indexed_at, content_bytes
  FROM prompts WHERE NOT deleted AND NOT hidden ORDER BY did, rkey`.cursor(1000, async (rows) => {
  const ok = out.write(rows.map((r) => `${JSON.stringify(r)}\n`).join(''))
  n += rows.length
  if (!ok) await once(out, 'drain')
})
out.end()
await once(out, 'finish')
await sql.end()
console.log(JSON.stringify({ rows: n }))
