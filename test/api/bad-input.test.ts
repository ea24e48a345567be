import { sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { expect, it } from 'vitest'
import { QUERIES } from '../../src/api/catalog/lexicons.ts'
import type { Database } from '../../src/db/client.ts'
import { NSIDS } from '../helpers/events.ts'
import { ALICE, isErrorShape, type Seeded, useSeededApp } from './fixtures.ts'

// Every parameter of every route × a list of hostile values. Nothing may be a 5xx, every
// error has the SPEC's shape, and the data is still there afterwards.

const TOKEN = 'admin-token'
let db: Database
let app: FastifyInstance
let s: Seeded
useSeededApp({ ADMIN_TOKEN: TOKEN }, (x) => {
  ;({ db, app, s } = x)
})

const b64 = (v: string) => Buffer.from(v, 'utf8').toString('base64url')

const NASTY: string[] = [
  "'",
  '"',
  "';--",
  "'; DROP TABLE prompts; --",
  '" OR "1"="1',
  "1' OR '1'='1",
  '1; SELECT pg_sleep(10)',
  'SELECT * FROM prompts',
  'UNION SELECT did FROM accounts',
  '$1',
  '%',
  '\\',
  '\u0000',
  'a\u0000b',
  '\n',
  ' ',
  '..',
  '../../etc/passwd',
  '<script>alert(1)</script>',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a log4j-style probe, on purpose
  '${jndi:ldap://x}',
  '-1',
  '1e309',
  'NaN',
  'Infinity',
  '9'.repeat(40),
  '-9223372036854775809',
  'true',
  '[]',
  '{}',
  '{"$ne":1}',
  'did:',
  'did:plc:',
  "did:plc:abc'",
  'did:plc:abc;drop',
  'did:plc:abc/def',
  `did:plc:${'a'.repeat(3000)}`,
  'at://',
  `at://did:plc:x/${NSIDS.prompt}/'`,
  `at://did:plc:x/${NSIDS.prompt}`,
  `at://did:plc:x/${NSIDS.prompt}/a/b`,
  `at://did:plc:x/${NSIDS.prompt}/x?y=1`,
  `at://did:plc:x'--/${NSIDS.prompt}/3abc`,
  `at://did:plc:x/${NSIDS.agent}/3abc`,
  'http://example.com/',
  'x'.repeat(10_000),
  '🙂',
  'ü.test',
  '\u202e',
  'ok; DROP TABLE prompts',
  'orphaned ',
  'ORPHANED',
  b64('not json'),
  b64(`["a'b","did:plc:x"]`),
  b64(`["3abc","did:plc:x'; drop table prompts"]`),
  b64('[1,2]'),
  b64('{"rkey":"x"}'),
  b64('["a","b","c"]'),
  '====',
]

/** Raw (already percent-encoded, some of it malformed) values spliced into URLs as they are. */
const RAW = ['%E0%A4%A', '%00', '%ZZ', '%2F', '%2e%2e%2f', '%27%3B--', '%C0%AF', '%FF%FE']

interface Case {
  method: 'GET' | 'POST'
  url: string
  /** Lists may legitimately answer 200 when a value happens to be valid syntax. */
  mayList: boolean
}

/** Every parameter of every XRPC query (the catalog's reads and getChanges) set to `v`. */
function xrpcCases(v: string, rkey: string): Case[] {
  const valid: Record<string, string> = {
    did: ALICE,
    rkey,
    rev: rkey,
    uri: encodeURIComponent(`at://${ALICE}/${NSIDS.prompt}/${rkey}`),
    q: 'prompt',
  }
  const out: Case[] = []
  for (const [nsid, def] of QUERIES) {
    const required = def.parameters?.required ?? []
    for (const name of Object.keys(def.parameters?.properties ?? {})) {
      const query = [...required.filter((r) => r !== name).map((r) => `${r}=${valid[r]}`)]
      const url = `/xrpc/${nsid}?${[...query, `${name}=${v}`].join('&')}`
      // Lists, search and the change feed may take a value that happens to be valid.
      out.push({ method: 'GET', url, mayList: required.length === 0 || nsid.endsWith('Prompts') })
    }
  }
  return out
}

function cases(): Case[] {
  const out: Case[] = []
  const rkey = s.alice.recompiled
  const values = [...NASTY.map((v) => encodeURIComponent(v)), ...RAW]
  const pathRoutes = [
    '/v1/prompts/{did}/{rkey}',
    '/v1/prompts/{did}/{rkey}/revisions',
    '/v1/conversations/{did}/{rkey}',
    '/v1/agents/{did}/{rkey}',
    '/v1/prompts/{did}/{rkey}/diff',
    `/v1/prompts/{did}/{rkey}/revisions/${rkey}`,
  ]
  for (const v of values) {
    for (const route of pathRoutes) {
      out.push({
        method: 'GET',
        url: route.replace('{did}', v).replace('{rkey}', rkey),
        mayList: false,
      })
      out.push({
        method: 'GET',
        url: route.replace('{did}', ALICE).replace('{rkey}', v),
        mayList: false,
      })
    }
    for (const action of ['hide', 'unhide', 'resync'])
      out.push({ method: 'POST', url: `/admin/repos/${v}/${action}`, mayList: false })
    out.push({ method: 'GET', url: `/v1/prompts?uri=${v}`, mayList: false })
    for (const p of ['flag', 'did', 'agent', 'limit', 'cursor'])
      out.push({ method: 'GET', url: `/v1/prompts?${p}=${v}`, mayList: true })
    for (const p of ['limit', 'cursor'])
      out.push({
        method: 'GET',
        url: `/v1/prompts/${ALICE}/${rkey}/revisions?${p}=${v}`,
        mayList: true,
      })
    for (const p of ['since', 'limit'])
      out.push({ method: 'GET', url: `/v1/changes?${p}=${v}`, mayList: true })
    out.push({ method: 'GET', url: `/v1/search?q=${v}`, mayList: true })
    out.push({ method: 'GET', url: `/v1/repos/${v}`, mayList: false })
    out.push({ method: 'GET', url: `/v1/prompts/${ALICE}/${rkey}/revisions/${v}`, mayList: false })
    for (const p of ['flag', 'did', 'agent', 'limit', 'cursor'])
      out.push({ method: 'GET', url: `/v1/search?q=prompt&${p}=${v}`, mayList: true })
    for (const p of ['from', 'to'])
      out.push({
        method: 'GET',
        url: `/v1/prompts/${ALICE}/${rkey}/diff?${p}=${v}`,
        mayList: false,
      })
    out.push(...xrpcCases(v, rkey))
  }
  // Repeated parameters arrive as arrays.
  for (const q of [
    'flag=ok&flag=orphaned',
    'limit=1&limit=2',
    'cursor=a&cursor=b',
    'since=1&since=2',
    'uri=a&uri=b',
  ])
    out.push({
      method: 'GET',
      url: `/v1/${q.startsWith('since') ? 'changes' : 'prompts'}?${q}`,
      mayList: false,
    })
  return out
}

it('hostile parameters get 400 or 404 with the error shape, never a 5xx', async () => {
  const all = cases()
  expect(all.length).toBeGreaterThan(500)
  const statuses = new Map<number, number>()
  for (const c of all) {
    const res = await app.inject({
      method: c.method,
      url: c.url,
      headers: c.method === 'POST' ? { authorization: `Bearer ${TOKEN}` } : {},
    })
    statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
    const where = `${c.method} ${c.url.slice(0, 120)} → ${res.statusCode} ${res.body.slice(0, 200)}`
    expect(res.statusCode, where).toBeLessThan(500)
    if (res.statusCode === 200) {
      expect(c.mayList, where).toBe(true)
      continue
    }
    expect([400, 404], where).toContain(res.statusCode)
    const body = res.json()
    expect(isErrorShape(body), where).toBe(true)
    expect(body.error, where).toBe(res.statusCode === 400 ? 'InvalidRequest' : 'NotFound')
  }
  // Most hostile values are malformed, and say so.
  expect(statuses.get(400) ?? 0).toBeGreaterThan(all.length / 2)
  // The data survived.
  const rows = await db.rows<{ n: number }>(sql`SELECT count(*)::int AS n FROM prompts`)
  expect(Number(rows[0].n)).toBeGreaterThan(15)
  expect((await app.inject(`/v1/prompts/${ALICE}/${s.alice.ok}`)).statusCode).toBe(200)
})

it('400 messages name the parameter', async () => {
  const expectations: Array<[string, RegExp]> = [
    [`/v1/prompts/did:plc:a'b/${s.alice.ok}`, /\bdid\b/],
    [`/v1/prompts/${ALICE}/a'b`, /\brkey\b/],
    ['/v1/prompts?uri=at://x', /\buri\b/],
    ['/v1/prompts?flag=nope', /\bflag\b/],
    ['/v1/prompts?did=did:x', /\bdid\b/],
    ['/v1/prompts?agent=at://did:plc:x/other.coll/abc', /\bagent\b/],
    ['/v1/prompts?limit=0', /\blimit\b/],
    ['/v1/prompts?limit=abc', /\blimit\b/],
    ['/v1/prompts?cursor=zzz', /\bcursor\b/],
    ['/v1/changes?since=x', /\bsince\b/],
    ['/v1/changes?limit=100000', /\blimit\b/],
  ]
  for (const [url, re] of expectations) {
    const res = await app.inject(url)
    expect(res.statusCode, url).toBe(400)
    expect(res.json().message, url).toMatch(re)
  }
})
