import type { FastifyInstance } from 'fastify'
import { describe, expect, it } from 'vitest'
import type { Database } from '../../src/db/client.ts'
import { NSIDS } from '../helpers/events.ts'
import { FLAG_NAMES } from '../helpers/reference-model.ts'
import {
  AGENT_RKEY,
  ALICE,
  agentUri,
  BOB,
  CAROL,
  conversationUri,
  makeApp,
  promptUri,
  type Seeded,
  useSeededApp,
} from './fixtures.ts'

let db: Database
let app: FastifyInstance
let s: Seeded
const get = useSeededApp({}, (x) => {
  ;({ db, app, s } = x)
})

describe('revisions, conversations, agents, stats', () => {
  it('revision history, newest first, paged', async () => {
    const r = await get(`/v1/prompts/${ALICE}/${s.alice.recompiled}/revisions`)
    expect(r.status).toBe(200)
    expect(r.body.uri).toBe(promptUri(ALICE, s.alice.recompiled))
    expect(r.body.items).toHaveLength(3)
    const revs = r.body.items.map((i: { rev: string }) => i.rev)
    expect(revs).toEqual([...revs].sort().reverse())
    expect(r.body.items[0].cid).toBe(
      (await get(`/v1/prompts/${ALICE}/${s.alice.recompiled}`)).body.cid,
    )
    expect(Object.keys(r.body.items[0]).sort()).toEqual(
      [
        'changed',
        'cid',
        'compiledAt',
        'contentHash',
        'memfsRevision',
        'memoryFiles',
        'rawSystemHash',
        'rev',
        'seenAt',
      ].sort(),
    )
    const p1 = await get(`/v1/prompts/${ALICE}/${s.alice.recompiled}/revisions?limit=2`)
    expect(p1.body.items).toHaveLength(2)
    const p2 = await get(
      `/v1/prompts/${ALICE}/${s.alice.recompiled}/revisions?limit=2&cursor=${p1.body.cursor}`,
    )
    expect([...p1.body.items, ...p2.body.items]).toEqual(r.body.items)
    expect(p2.body.cursor).toBeUndefined()
    expect((await get(`/v1/prompts/${CAROL}/${s.carolRkey}/revisions`)).status).toBe(404)
    expect((await get(`/v1/prompts/${ALICE}/3zzzzzzzzzz22/revisions`)).status).toBe(404)
  })

  it('conversation with the prompt in its slot, or null', async () => {
    const r = await get(`/v1/conversations/${ALICE}/${s.alice.mismatched}`)
    expect(r.body).toEqual({
      uri: conversationUri(ALICE, s.alice.mismatched),
      cid: expect.any(String),
      did: ALICE,
      rkey: s.alice.mismatched,
      record: { $type: NSIDS.conversation, title: `chat ${s.alice.mismatched}` },
      prompt: { uri: promptUri(ALICE, s.alice.mismatched), flags: ['mismatched'] },
    })
    expect(
      (await get(`/v1/conversations/alice.test/${s.lonelyConversation}`)).body.prompt,
    ).toBeNull()
    expect((await get(`/v1/conversations/${ALICE}/${s.alice.orphaned}`)).status).toBe(404)
    expect((await get(`/v1/conversations/${CAROL}/${s.carolRkey}`)).status).toBe(404)
  })

  it('agent summary counts visible prompts naming it, from any repo', async () => {
    const r = await get(`/v1/agents/${ALICE}/${AGENT_RKEY}`)
    expect(r.status).toBe(200)
    expect(r.body.uri).toBe(agentUri(ALICE, AGENT_RKEY))
    expect(r.body.agent).toMatchObject({ $type: NSIDS.agent, system: 'template v1' })
    const p = r.body.prompts
    expect(Object.keys(p).sort()).toEqual(['total', ...FLAG_NAMES, 'ok'].sort())
    expect(p.total).toBe(15)
    expect(p.orphaned).toBe(1)
    expect(p.coreMemoryDetached).toBe(1)
    // Named only by prompts: the record is unknown, the counts are not.
    const ghost = await get(`/v1/agents/bob.test/ghost`)
    expect(ghost.body).toMatchObject({ agent: null, prompts: { total: 4, ok: 4 } })
    // Neither indexed nor named by a visible prompt; carol's agent is hidden with her repo.
    expect((await get(`/v1/agents/${BOB}/nothing`)).status).toBe(404)
    expect((await get(`/v1/agents/${CAROL}/${AGENT_RKEY}`)).status).toBe(404)
  })

  it('stats count only visible records', async () => {
    const r = await get('/v1/stats')
    expect(r.status).toBe(200)
    // alice: six slots and one lonely conversation; bob: twelve (the late prompt has none)
    expect(r.body).toMatchObject({ conversations: 7 + 12, agents: 1 })
    expect(r.body.prompts).toBe(7 + s.bobRkeys.length)
    const sum = Object.values(r.body.flags as Record<string, number>)
    expect(sum.every((n) => Number.isInteger(n))).toBe(true)
    expect(r.body.ingest).toEqual({
      source: null,
      cursor: null,
      lagSeconds: null,
      lastEventAt: null,
      gap: null,
    })
  })
})

describe('docs and errors', () => {
  it('serves OpenAPI at /openapi.json and docs at /docs', async () => {
    const r = await get('/openapi.json')
    expect(r.status).toBe(200)
    expect(r.body.openapi).toMatch(/^3\./)
    for (const path of [
      '/v1/prompts/{did}/{rkey}',
      '/v1/prompts',
      '/v1/prompts/{did}/{rkey}/revisions',
      '/v1/conversations/{did}/{rkey}',
      '/v1/agents/{did}/{rkey}',
      '/v1/stats',
      '/v1/changes',
      '/metrics',
      '/healthz',
      '/readyz',
    ])
      expect(r.body.paths[path], path).toBeDefined()
    expect(r.body.paths['/admin/repos/{did}/hide']).toBeUndefined()
    const docs = await app.inject('/docs')
    expect(docs.statusCode).toBeLessThan(400)
  })

  it('unknown routes are 404 with the error shape', async () => {
    const r = await get('/v2/nothing')
    expect(r.status).toBe(404)
    expect(r.body.error).toBe('NotFound')
  })

  it('an ingest-only process (readApi: false) answers only probes and metrics', async () => {
    const ingestOnly = await makeApp(db, { ADMIN_TOKEN: 't' }, { readApi: false })
    try {
      for (const url of ['/healthz', '/readyz', '/metrics'])
        expect((await ingestOnly.inject(url)).statusCode, url).toBe(200)
      for (const url of ['/v1/stats', '/v1/prompts', '/openapi.json', '/v1/changes'])
        expect((await ingestOnly.inject(url)).statusCode, url).toBe(404)
    } finally {
      await ingestOnly.close()
    }
  })

  it('the request histogram is labelled by route pattern, never by DID', async () => {
    await get(`/v1/prompts/${ALICE}/${s.alice.ok}`)
    const text = (await app.inject('/metrics')).body
    expect(text).toMatch(
      /prompt_appview_http_request_duration_seconds_count\{route="\/v1\/prompts\/:did\/:rkey",method="GET",status_code="200"\}/,
    )
    expect(text).not.toContain(ALICE)
  })
})
