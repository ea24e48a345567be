import Fastify from 'fastify'
import postgres from 'postgres'
import { FLAG_BITS } from '../../src/model/flags.ts'

// The read benchmark's plain baseline: what a user would write themselves with Fastify and
// postgres.js, one indexed SELECT per request and no features (no validation, no existence
// flags, no ETag, no compression, no rate limit, no metrics, no response schema). It answers
// the same paths as the product, so both serve exactly the same load; listening on PORT,
// reading DATABASE_URL, with the product's pool size.

const sql = postgres(String(process.env.DATABASE_URL), { max: 10, onnotice: () => {} })
const app = Fastify({ logger: false })

app.get<{ Params: { did: string; rkey: string } }>(
  '/v1/prompts/:did/:rkey',
  async (request, reply) => {
    const { did, rkey } = request.params
    const [row] = await sql`SELECT did, rkey, rev, cid, record, flags, recompiles, indexed_at,
        validation_error, agent_uri FROM prompts
      WHERE did = ${did} AND rkey = ${rkey} AND NOT deleted AND NOT hidden`
    if (!row) return reply.code(404).send({ error: 'NotFound' })
    return row
  },
)

interface ListQuery {
  flag?: string
  did?: string
  agent?: string
  limit?: string
  cursor?: string
}

const flagBit = (flag: string | undefined) =>
  flag === undefined || flag === 'ok' ? 0 : FLAG_BITS[flag as keyof typeof FLAG_BITS]

// The same keyset page as the product's (rkey DESC, did), one statement; the product's
// cursor is base64url JSON [rkey, did], read here without checks.
app.get<{ Querystring: ListQuery }>('/v1/prompts', async (request) => {
  const q = request.query
  const limit = Number(q.limit ?? 50)
  const after = q.cursor
    ? (JSON.parse(Buffer.from(q.cursor, 'base64url').toString()) as [string, string])
    : null
  const agent = q.agent ? q.agent.slice('at://'.length).split('/') : null
  const bit = flagBit(q.flag)
  // Flag predicates as literals, like the partial indexes', so the planner can use them.
  const flagWhere =
    q.flag === undefined
      ? sql``
      : q.flag === 'ok'
        ? sql`AND flags = 0`
        : sql`AND (flags & ${sql.unsafe(String(bit))}) <> 0`
  const rows = await sql`SELECT did, rkey, rev, cid, list_record AS record, flags, recompiles,
      indexed_at, validation_error, agent_uri, content_bytes FROM prompts
    WHERE NOT deleted AND NOT hidden ${flagWhere}
      ${q.did ? sql`AND did = ${q.did}` : sql``}
      ${agent ? sql`AND agent_did = ${agent[0]} AND agent_rkey = ${agent[2]}` : sql``}
      ${after ? sql`AND rkey <= ${after[0]} AND (rkey < ${after[0]} OR did > ${after[1]})` : sql``}
    ORDER BY rkey DESC NULLS LAST, did ASC LIMIT ${limit + 1}`
  const items = rows.slice(0, limit)
  const last = items.at(-1)
  return rows.length > limit && last
    ? { items, cursor: Buffer.from(JSON.stringify([last.rkey, last.did])).toString('base64url') }
    : { items }
})

app.get('/readyz', async () => ({ ok: true }))
await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT) })
process.on(
  'SIGTERM',
  () =>
    void app
      .close()
      .then(() => sql.end({ timeout: 5 }))
      .then(() => process.exit(0)),
)
