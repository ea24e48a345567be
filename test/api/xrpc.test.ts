import type { AddressInfo } from 'node:net'
import { XRPCError } from '@atproto/xrpc'
import { sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { beforeAll, describe, expect, it } from 'vitest'
import { QUERIES } from '../../src/api/catalog/lexicons.ts'
import { ConfigError, loadConfig } from '../../src/config/config.ts'
import type { Database } from '../../src/db/client.ts'
import { FILTER_NAMES, FLAG_NAMES } from '../../src/model/flags.ts'
import { NSIDS } from '../helpers/events.ts'
import {
  AtpBaseClient,
  type XyzQuasigodLabLettaAppviewListPrompts,
  type XyzQuasigodLabLettaAppviewSearchPrompts,
} from '../xrpc-client/index.ts'
import { AGENT_RKEY, ALICE, BOB, CAROL, promptUri, type Seeded, useSeededApp } from './fixtures.ts'

// The XRPC face of the read API (SPEC 13): the client generated from lexicons/…/appview/
// (@atproto/lex-cli gen-api, test/xrpc-client/) calls every query over real HTTP and gets
// the REST answer, checked by the client itself against the lexicon's output schema on the
// way in; bad parameters are XRPC InvalidRequest errors, unknown methods
// MethodNotImplemented, and SERVICE_DID serves the DID document a PDS proxies by.

const { prompt: P, conversation: C, agent: A } = NSIDS
const SERVICE_DID = 'did:web:appview.test'
const PUBLIC_URL = 'https://appview.test'

let app: FastifyInstance
let s: Seeded
let db: Database
let base: string
let xrpc: AtpBaseClient['xyz']['quasigod']['lab']['letta']['appview']

useSeededApp({ SERVICE_DID, PUBLIC_URL }, (x) => {
  ;({ app, s, db } = x)
})
beforeAll(async () => {
  await app.listen({ host: '127.0.0.1', port: 0 })
  base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  xrpc = new AtpBaseClient({ service: base }).xyz.quasigod.lab.letta.appview
})

/** A REST answer over HTTP: its status and parsed JSON. */
// biome-ignore lint/suspicious/noExplicitAny: JSON answers, compared whole or field by field
async function rest(path: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${base}${path}`)
  return { status: res.status, body: await res.json() }
}

/** The same read over REST (200) and through the generated client: equal answers. */
async function same<T>(call: () => Promise<{ data: T }>, path: string): Promise<T> {
  const want = await rest(path)
  expect(want.status, path).toBe(200)
  const got = await call()
  expect(got.data, path).toEqual(want.body)
  return got.data
}

/** The XRPC error a call fails with. */
async function xrpcError(call: () => Promise<unknown>): Promise<XRPCError> {
  try {
    await call()
  } catch (err) {
    expect(err).toBeInstanceOf(XRPCError)
    return err as XRPCError
  }
  throw new Error('the call succeeded')
}

describe('XRPC queries answer what REST answers', () => {
  it('getStats', async () => {
    const got = await same(() => xrpc.getStats(), '/v1/stats')
    expect(got.prompts).toBeGreaterThan(0)
  })

  it('getPrompt and getPromptByUri, for a prompt of every flag', async () => {
    for (const rkey of Object.values(s.alice)) {
      const path = `/v1/prompts/${ALICE}/${rkey}`
      const got = await same(() => xrpc.getPrompt({ did: ALICE, rkey }), path)
      expect(got.uri).toBe(`at://${ALICE}/${P}/${rkey}`)
      await same(() => xrpc.getPromptByUri({ uri: got.uri }), path)
      // The conversation's at-uri names the prompt in the same slot.
      await same(() => xrpc.getPromptByUri({ uri: `at://${ALICE}/${C}/${rkey}` }), path)
    }
    // A handle names the repo, as in REST.
    const rkey = s.alice.recompiled
    const got = await same(
      () => xrpc.getPrompt({ did: 'alice.test', rkey }),
      `/v1/prompts/alice.test/${rkey}`,
    )
    expect(got.recompiles).toBe(2)
    expect(Object.keys(got.reasons ?? {}).sort()).toEqual([...got.flags].sort())
  })

  it('listPrompts, with each filter, page after page', async () => {
    const lists: XyzQuasigodLabLettaAppviewListPrompts.QueryParams[] = [
      {},
      { flag: 'orphaned' },
      { flag: 'ok' },
      { did: BOB },
      { did: 'bob.test' },
      { agent: `at://${ALICE}/${A}/${AGENT_RKEY}` },
      { agent: `at://${BOB}/${A}/ghost`, did: BOB },
      { did: 'nobody.test' },
      { sort: 'recompiles', limit: 3 },
      { sort: 'size', flag: 'ok' },
      { sort: 'compiled', did: BOB },
    ]
    for (const q of lists) {
      const qs = new URLSearchParams(q as Record<string, string>).toString()
      await same(() => xrpc.listPrompts(q), `/v1/prompts?${qs}`)
    }
    let cursor: string | undefined
    let pages = 0
    do {
      const qs = new URLSearchParams({ limit: '4', ...(cursor ? { cursor } : {}) })
      const page = await same(() => xrpc.listPrompts({ limit: 4, cursor }), `/v1/prompts?${qs}`)
      for (const item of page.items) expect(item.did).not.toBe(CAROL)
      cursor = page.cursor
      pages++
    } while (cursor)
    expect(pages).toBeGreaterThan(2)
  })

  it('searchPrompts', async () => {
    const searches: XyzQuasigodLabLettaAppviewSearchPrompts.QueryParams[] = [
      { q: 'agent' },
      { q: 'you are', did: ALICE },
      { q: 'agent', flag: 'coreMemoryDetached' },
      { q: 'agent', limit: 1 },
      { q: 'nothingmatchesthis' },
    ]
    for (const q of searches) {
      const qs = new URLSearchParams(
        Object.entries(q).map(([k, v]) => [k, String(v)]) as [string, string][],
      )
      await same(() => xrpc.searchPrompts(q), `/v1/search?${qs}`)
    }
  })

  it('getPromptRevisions, getPromptRevision and getPromptDiff', async () => {
    const rkey = s.alice.recompiled
    const path = `/v1/prompts/${ALICE}/${rkey}`
    const history = await same(
      () => xrpc.getPromptRevisions({ did: ALICE, rkey }),
      `${path}/revisions`,
    )
    expect(history.items).toHaveLength(3)
    const first = await same(
      () => xrpc.getPromptRevisions({ did: ALICE, rkey, limit: 1 }),
      `${path}/revisions?limit=1`,
    )
    expect(first.cursor).toBeDefined()
    await same(
      () => xrpc.getPromptRevisions({ did: ALICE, rkey, limit: 1, cursor: first.cursor }),
      `${path}/revisions?limit=1&cursor=${first.cursor}`,
    )
    for (const { rev } of history.items)
      await same(
        () => xrpc.getPromptRevision({ did: ALICE, rkey, rev }),
        `${path}/revisions/${rev}`,
      )
    const [newest, , oldest] = history.items.map((r) => r.rev)
    await same(() => xrpc.getPromptDiff({ did: ALICE, rkey }), `${path}/diff`)
    await same(
      () => xrpc.getPromptDiff({ did: ALICE, rkey, from: oldest, to: newest }),
      `${path}/diff?from=${oldest}&to=${newest}`,
    )
    await same(
      () => xrpc.getPromptDiff({ did: ALICE, rkey, to: oldest }),
      `${path}/diff?to=${oldest}`,
    )
  })

  it('getConversation, getAgent and getRepo', async () => {
    for (const rkey of [s.alice.ok, s.lonelyConversation, s.alice.mismatched])
      await same(
        () => xrpc.getConversation({ did: ALICE, rkey }),
        `/v1/conversations/${ALICE}/${rkey}`,
      )
    const agent = await same(
      () => xrpc.getAgent({ did: ALICE, rkey: AGENT_RKEY }),
      `/v1/agents/${ALICE}/${AGENT_RKEY}`,
    )
    expect(agent.agent).not.toBeNull()
    // Named by bob's prompts, never indexed: the counts, and a null record.
    const ghost = await same(
      () => xrpc.getAgent({ did: BOB, rkey: 'ghost' }),
      `/v1/agents/${BOB}/ghost`,
    )
    expect(ghost.agent).toBeNull()
    for (const did of [ALICE, BOB, 'alice.test'])
      await same(() => xrpc.getRepo({ did }), `/v1/repos/${did}`)
  })

  it('getChanges: the lines of GET /v1/changes as a JSON page, carol withheld', async () => {
    const feed = async (qs: string) => {
      const res = await fetch(`${base}/v1/changes?${qs}`)
      return (await res.text())
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    }
    const all = await feed('limit=10000')
    expect(all.length).toBeGreaterThan(10)
    const whole = await xrpc.getChanges({})
    expect(whole.data.changes).toEqual(all)
    expect(whole.data.changes.some((c) => c.uri.includes(CAROL) && c.op === 'upsert')).toBe(false)
    // Page by page, each page the REST lines for the same since and limit, to the end.
    let since = 0
    const seen: unknown[] = []
    for (;;) {
      const page = await xrpc.getChanges({ since, limit: 7 })
      expect(page.data.changes).toEqual(await feed(`since=${since}&limit=7`))
      seen.push(...page.data.changes)
      if (page.data.changes.length === 0) {
        expect(page.data.cursor).toBe(since)
        break
      }
      expect(page.data.cursor).toBeGreaterThanOrEqual(page.data.changes.at(-1)!.seq)
      since = page.data.cursor
    }
    expect(seen).toEqual(all)
  })

  it('getChanges include=record: the lines of GET /v1/changes?include=record, older versions too', async () => {
    const feed = async (qs: string) => {
      const res = await fetch(`${base}/v1/changes?include=record&${qs}`)
      return (await res.text())
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    }
    const all = await feed('limit=10000')
    expect(
      all.filter((c) => c.op === 'upsert' && typeof c.record === 'object').length,
    ).toBeGreaterThan(10)
    // Each page as the client took it, checked against the lexicon (record, superseded).
    const pages = async () => {
      let since = 0
      const seen: unknown[] = []
      for (;;) {
        const page = await xrpc.getChanges({ since, limit: 7, include: 'record' })
        expect(page.data.changes).toEqual(await feed(`since=${since}&limit=7`))
        if (page.data.changes.length === 0) return seen
        seen.push(...page.data.changes)
        since = page.data.cursor
      }
    }
    expect(await pages()).toEqual(all)
    expect((await xrpc.getChanges({ include: 'record' })).data.changes).toEqual(all)
    // A version no longer kept whole: record null, superseded, as REST says it.
    const uri = promptUri(ALICE, s.alice.recompiled)
    const first = all.find((c) => c.uri === uri)
    await db.rows(sql`UPDATE prompt_revisions SET record_rest = NULL WHERE cid = ${first.cid}`)
    try {
      const again = (await pages()).find((c) => (c as { seq: number }).seq === first.seq)
      expect(again).toEqual({ ...first, record: null, superseded: true })
    } finally {
      await db.rows(sql`UPDATE prompt_revisions r SET record_rest = p.record - 'content' - 'coreMemory'
        FROM prompts p WHERE r.cid = ${first.cid} AND p.did = r.did AND p.rkey = r.rkey`)
    }
  })

  it('answers HEAD, conditional GETs and compression like the REST routes', async () => {
    const url = `${base}/xrpc/xyz.quasigod.lab.letta.appview.getPrompt?did=${ALICE}&rkey=${s.alice.ok}`
    const first = await fetch(url, { headers: { 'accept-encoding': 'gzip' } })
    expect(first.headers.get('cache-control')).toBe('public, max-age=10')
    expect(first.headers.get('content-encoding')).toBe('gzip')
    expect(first.headers.get('access-control-allow-origin')).toBe('*')
    const etag = first.headers.get('etag')!
    expect((await fetch(url, { headers: { 'if-none-match': etag } })).status).toBe(304)
    expect((await fetch(url, { method: 'HEAD' })).status).toBe(200)
  })
})

describe('XRPC errors', () => {
  it('bad parameters are InvalidRequest naming the parameter, as the lexicon validates them', async () => {
    const cases: Array<[() => Promise<unknown>, RegExp]> = [
      [() => xrpc.getPrompt({ did: 'not a did', rkey: s.alice.ok }), /did/],
      [() => xrpc.getPrompt({ did: ALICE } as never), /rkey/],
      [() => xrpc.getPrompt({ did: ALICE, rkey: 'a/b' }), /rkey/],
      [() => xrpc.listPrompts({ limit: 0 }), /limit/],
      [() => xrpc.listPrompts({ limit: 101 }), /limit/],
      [() => xrpc.listPrompts({ flag: 'nope' as 'ok' }), /flag must be one of/],
      [() => xrpc.listPrompts({ sort: 'newest' as 'size' }), /sort must be one of/],
      [() => xrpc.listPrompts({ cursor: 'garbage!' }), /cursor is malformed/],
      [() => xrpc.listPrompts({ agent: `at://${ALICE}/${P}/x` }), /agent must be an at-uri/],
      [() => xrpc.searchPrompts({ q: '!!!' }), /q has no words/],
      [() => xrpc.getPromptByUri({ uri: 'https://example.com' }), /uri/],
      [() => xrpc.getChanges({ since: -1 }), /since/],
      [() => xrpc.getChanges({ include: 'records' }), /include must be record/],
    ]
    for (const [call, message] of cases) {
      const err = await xrpcError(call)
      expect(err.error, String(call)).toBe('InvalidRequest')
      expect(err.message, String(call)).toMatch(message)
    }
    // What the client cannot send: a wrong type, an integer in another spelling, twice.
    const path = '/xrpc/xyz.quasigod.lab.letta.appview.listPrompts'
    for (const qs of ['limit=abc', 'limit=1e2', 'limit=05', 'limit=+5', 'limit=1&limit=2']) {
      const res = await rest(`${path}?${qs}`)
      expect(res, qs).toEqual({
        status: 400,
        body: { error: 'InvalidRequest', message: expect.stringMatching(/^limit must be/) },
      })
    }
    // A parameter the lexicon does not declare is ignored, as XRPC servers do.
    expect((await rest(`${path}?limit=1&bogus=1`)).status).toBe(200)
  })

  it('NotFound as REST: absent, hidden (carol taken down), unknown handle', async () => {
    for (const call of [
      () => xrpc.getPrompt({ did: ALICE, rkey: s.w.tid() }),
      () => xrpc.getPrompt({ did: CAROL, rkey: s.carolRkey }),
      () => xrpc.getPrompt({ did: 'nobody.test', rkey: s.alice.ok }),
      () => xrpc.getConversation({ did: ALICE, rkey: s.w.tid() }),
      () => xrpc.getAgent({ did: ALICE, rkey: 'nothing' }),
      () => xrpc.getPromptRevision({ did: ALICE, rkey: s.alice.ok, rev: s.w.tid() }),
      () => xrpc.getRepo({ did: 'did:plc:nobodyaaaaaaaaaaaaaaaaaa' }),
    ]) {
      const err = await xrpcError(call)
      expect(err.error).toBe('NotFound')
    }
  })

  it('an unknown method is MethodNotImplemented (501); a path that is no NSID, InvalidRequest', async () => {
    expect(await rest('/xrpc/com.example.nothing.here')).toEqual({
      status: 501,
      body: { error: 'MethodNotImplemented', message: expect.stringContaining('com.example') },
    })
    expect(await rest('/xrpc/app.bsky.feed.getTimeline?limit=1')).toMatchObject({ status: 501 })
    for (const path of [
      '/xrpc/nope',
      '/xrpc/',
      '/xrpc/a..b',
      '/xrpc/xyz.quasigod.lab.letta.appview.getStats/',
    ])
      expect(await rest(path), path).toMatchObject({
        status: 400,
        body: { error: 'InvalidRequest' },
      })
    const post = await fetch(`${base}/xrpc/xyz.quasigod.lab.letta.appview.getStats`, {
      method: 'POST',
    })
    expect(post.status).toBe(405)
    expect(post.headers.get('allow')).toBe('GET, HEAD')
    expect(await post.json()).toMatchObject({ error: 'InvalidRequest' })
    // A browser asking for HTML still gets the XRPC error, not a page.
    const html = await fetch(`${base}/xrpc/nope`, { headers: { accept: 'text/html' } })
    expect(html.headers.get('content-type')).toMatch(/^application\/json/)
  })
})

describe('lexicons and SERVICE_DID', () => {
  it('a lexicon per query, each marked a proposal, flag names as the model has them', async () => {
    expect([...QUERIES.keys()].sort()).toEqual(
      [
        'getAgent',
        'getChanges',
        'getConversation',
        'getPrompt',
        'getPromptByUri',
        'getPromptDiff',
        'getPromptRevision',
        'getPromptRevisions',
        'getRepo',
        'getStats',
        'listPrompts',
        'searchPrompts',
      ].map((m) => `xyz.quasigod.lab.letta.appview.${m}`),
    )
    for (const def of QUERIES.values()) expect(def.description).toMatch(/^PROPOSAL/)
    const flag = QUERIES.get('xyz.quasigod.lab.letta.appview.listPrompts')?.parameters?.properties
      .flag as { enum: string[] }
    expect(flag.enum).toEqual([...FILTER_NAMES])
    const { readFileSync } = await import('node:fs')
    const defs = JSON.parse(
      readFileSync(
        new URL('../../lexicons/xyz/quasigod/lab/letta/appview/defs.json', import.meta.url),
        'utf8',
      ),
    )
    expect(defs.defs.promptView.properties.flags.items.knownValues).toEqual(FLAG_NAMES)
    expect(Object.keys(defs.defs.reasons.properties)).toEqual(FLAG_NAMES)
    expect(Object.keys(defs.defs.flagCounts.properties)).toEqual([...FILTER_NAMES])
  })

  it('the XRPC routes are in the OpenAPI document, with their parameters', async () => {
    const doc = (await rest('/openapi.json')).body
    const op = doc.paths['/xrpc/xyz.quasigod.lab.letta.appview.listPrompts'].get
    expect(op.parameters.map((p: { name: string }) => p.name).sort()).toEqual(
      ['agent', 'cursor', 'did', 'flag', 'limit', 'sort'].sort(),
    )
    expect(doc.paths['/.well-known/did.json']).toBeDefined()
  })

  it('serves the DID document with the #prompt_appview service', async () => {
    const res = await fetch(`${base}/.well-known/did.json`)
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({
      '@context': ['https://www.w3.org/ns/did/v1'],
      id: SERVICE_DID,
      service: [{ id: '#prompt_appview', type: 'PromptAppView', serviceEndpoint: PUBLIC_URL }],
    })
  })

  it('SERVICE_DID must be a did:web of a host; PUBLIC_URL an origin, with SERVICE_DID', () => {
    const problems = (env: Record<string, string>) => {
      try {
        loadConfig({}, env)
        return []
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError)
        return (err as ConfigError).problems
      }
    }
    expect(problems({ SERVICE_DID: 'did:web:appview.example.com' })).toEqual([])
    expect(problems({ SERVICE_DID: 'did:web:localhost%3A3000' })).toEqual([])
    expect(problems({ SERVICE_DID: '' })).toEqual([])
    for (const bad of ['did:plc:abc', 'appview.example.com', 'did:web:example.com:user:alice'])
      expect(problems({ SERVICE_DID: bad }), bad).toEqual([
        expect.stringMatching(/^SERVICE_DID=.*did:web/),
      ])
    expect(problems({ SERVICE_DID: 'did:web:%2Fetc' })).toEqual([
      expect.stringMatching(/^SERVICE_DID=.*must name a host/),
    ])
    expect(problems({ SERVICE_DID, PUBLIC_URL: 'https://x.example/api' })).toEqual([
      expect.stringMatching(/^PUBLIC_URL=.*origin/),
    ])
    expect(problems({ PUBLIC_URL: 'https://x.example' })).toEqual([
      expect.stringMatching(/PUBLIC_URL .*SERVICE_DID/),
    ])
    const c = loadConfig({}, { SERVICE_DID, PUBLIC_URL: 'https://x.example/' })
    expect(c.publicUrl).toBe('https://x.example')
  })
})
