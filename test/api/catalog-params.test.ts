import type { FastifyInstance } from 'fastify'
import { expect, it } from 'vitest'
import type { Read } from '../../src/api/catalog/define.ts'
import { QUERIES } from '../../src/api/catalog/lexicons.ts'
import { READS } from '../../src/api/catalog/reads.ts'
import { NSIDS } from '../helpers/events.ts'
import { AGENT_RKEY, ALICE, promptUri, type Seeded, useSeededApp } from './fixtures.ts'

// Every read of the catalog, every parameter its lexicon declares, several invalid values
// each: REST and XRPC answer the same 400 InvalidRequest with the same message, because
// both check the parameters once, against the read's lexicon (catalog/lexicons.ts).

let app: FastifyInstance
let s: Seeded
useSeededApp({}, (x) => {
  ;({ app, s } = x)
})

type Params = Record<string, string>
const e = encodeURIComponent
const qs = (p: Params) => new URLSearchParams(p).toString()
const withQuery = (path: string, q: Params) => (Object.keys(q).length ? `${path}?${qs(q)}` : path)

/** Each read's REST URL for its parameters, as SPEC section 6 routes them. */
const REST: Record<keyof typeof READS, (p: Params) => string> = {
  getStats: (q) => withQuery('/v1/stats', q),
  getPrompt: ({ did, rkey }) => `/v1/prompts/${e(did)}/${e(rkey)}`,
  getPromptByUri: (q) => withQuery('/v1/prompts', q),
  listPrompts: (q) => withQuery('/v1/prompts', q),
  searchPrompts: (q) => withQuery('/v1/search', q),
  getPromptRevisions: ({ did, rkey, ...q }) =>
    withQuery(`/v1/prompts/${e(did)}/${e(rkey)}/revisions`, q),
  getPromptRevision: ({ did, rkey, rev }) => `/v1/prompts/${e(did)}/${e(rkey)}/revisions/${e(rev)}`,
  getPromptDiff: ({ did, rkey, ...q }) => withQuery(`/v1/prompts/${e(did)}/${e(rkey)}/diff`, q),
  getConversation: ({ did, rkey }) => `/v1/conversations/${e(did)}/${e(rkey)}`,
  getAgent: ({ did, rkey }) => `/v1/agents/${e(did)}/${e(rkey)}`,
  getRepo: ({ did }) => `/v1/repos/${e(did)}`,
}

/** Valid values of every parameter name the lexicons use, for the other parameters. */
const valid = (): Params => ({
  did: ALICE,
  rkey: s.alice.recompiled,
  rev: s.alice.recompiled,
  uri: promptUri(ALICE, s.alice.recompiled),
  q: 'prompt',
})

/** Invalid values of a parameter, by its lexicon type and format (and for some, its name). */
function invalid(name: string, prop: { type: string; format?: string; enum?: unknown }): string[] {
  if (prop.type === 'integer') return ['0', 'abc', '1e2', '05', '-1', '9'.repeat(20)]
  if (prop.enum) return ['nope', 'OK', '']
  if (name === 'q')
    return ['!!!', '', 'a'.repeat(1001), Array.from({ length: 20 }, (_, i) => `w${i}`).join(' ')]
  if (name === 'cursor') return ['!!', 'zzz', Buffer.from('[1,2]').toString('base64url')]
  switch (prop.format) {
    case 'at-identifier':
      return ['not a did', 'did:x', `did:plc:${'a'.repeat(3000)}`, "alice'.test"]
    case 'record-key':
      return ['a b', 'a%b', 'x'.repeat(600), "3abc'"]
    case 'at-uri':
      return ['https://example.com', 'at://', `at://${ALICE}/${NSIDS.agent}x/3abc`]
  }
  throw new Error(`no invalid values for ${name} (${prop.type})`)
}

async function answer(url: string) {
  const res = await app.inject(url)
  return { status: res.statusCode, body: res.json() as { error: string; message: string } }
}

async function expectSame(read: Read, params: Params, what: string) {
  const rest = await answer(REST[read.name as keyof typeof READS](params))
  const xrpc = await answer(withQuery(`/xrpc/${read.nsid}`, params))
  expect(rest.status, `REST ${what}: ${JSON.stringify(rest.body)}`).toBe(400)
  expect(rest.body.error, what).toBe('InvalidRequest')
  expect(xrpc, `XRPC ${what}`).toEqual(rest)
}

it('an invalid parameter gets the same 400 and message by REST and XRPC, for every read', async () => {
  let checked = 0
  for (const read of Object.values(READS) as Read[]) {
    const params = QUERIES.get(read.nsid)?.parameters
    const declared = Object.entries(params?.properties ?? {})
    const base: Params = {}
    for (const name of params?.required ?? []) base[name] = valid()[name]
    for (const [name, prop] of declared) {
      for (const bad of invalid(name, prop as never)) {
        await expectSame(read, { ...base, [name]: bad }, `${read.name} ${name}=${bad.slice(0, 40)}`)
        checked++
      }
    }
    // A required query parameter left out (path parameters cannot be: another route).
    for (const name of params?.required ?? [])
      if (!REST[read.name as keyof typeof READS](base).includes(e(base[name]))) {
        const { [name]: _, ...rest } = base
        await expectSame(read, rest, `${read.name} without ${name}`)
        checked++
      }
  }
  expect(checked).toBeGreaterThan(100)
})

it('a repeated parameter is refused alike by REST and XRPC', async () => {
  for (const [read, path, xrpcQuery] of [
    [READS.listPrompts, '/v1/prompts', 'limit=1&limit=2'],
    [READS.searchPrompts, '/v1/search', 'q=a&q=b'],
  ] as const) {
    const rest = await answer(`${path}?${xrpcQuery}`)
    const xrpc = await answer(`/xrpc/${read.nsid}?${xrpcQuery}`)
    expect(rest).toMatchObject({ status: 400, body: { error: 'InvalidRequest' } })
    expect(xrpc).toEqual(rest)
  }
})

it('every read of the catalog has a REST route and an XRPC method over the same check', async () => {
  for (const read of Object.values(READS) as Read[]) {
    expect(QUERIES.has(read.nsid), read.nsid).toBe(true)
    const revs = await app.inject(REST.getPromptRevisions(valid()))
    const rkey = read === READS.getAgent ? AGENT_RKEY : s.alice.recompiled
    const params: Params = { ...valid(), rkey, rev: revs.json().items[0].rev as string }
    const needed = Object.fromEntries(
      (QUERIES.get(read.nsid)?.parameters?.required ?? []).map((n) => [n, params[n]]),
    )
    const rest = await app.inject(REST[read.name as keyof typeof READS](needed))
    const xrpc = await app.inject(withQuery(`/xrpc/${read.nsid}`, needed))
    expect(rest.statusCode, read.name).toBe(200)
    expect(xrpc.statusCode, read.name).toBe(200)
  }
})
