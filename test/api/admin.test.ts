import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Database } from '../../src/db/client.ts'
import { createTestDatabase } from '../helpers/db.ts'
import { ALICE, BOB, isErrorShape, makeApp, type Seeded, seed } from './fixtures.ts'

const TOKEN = 'correct horse battery staple'
let db: Database
let app: FastifyInstance
let s: Seeded
const resynced: string[] = []

beforeAll(async () => {
  db = await createTestDatabase()
  s = await seed(db)
  app = await makeApp(
    db,
    { ADMIN_TOKEN: TOKEN },
    {
      resyncRepo: async (did) => {
        if (did === BOB) throw new Error('PDS unreachable')
        resynced.push(did)
      },
    },
  )
})
afterAll(async () => {
  await app?.close()
  await db?.close()
})

const post = (url: string, token: string | null = TOKEN, raw?: string) =>
  app.inject({
    method: 'POST',
    url,
    headers:
      raw !== undefined
        ? { authorization: raw }
        : token === null
          ? {}
          : { authorization: `Bearer ${token}` },
  })

describe('admin auth', () => {
  it('missing or wrong tokens of any length are 401 AuthRequired', async () => {
    const wrong = [
      '',
      'x',
      TOKEN.slice(0, -1),
      `${TOKEN}x`,
      TOKEN.toUpperCase(),
      'a'.repeat(10_000),
      "' OR 1=1 --",
    ]
    const headers = [
      undefined,
      ...wrong.map((t) => `Bearer ${t}`),
      TOKEN,
      `Basic ${TOKEN}`,
      `Bearer`,
      `Token ${TOKEN}`,
    ]
    for (const path of ['hide', 'unhide', 'resync']) {
      for (const h of headers) {
        const res = await app.inject({
          method: 'POST',
          url: `/admin/repos/${ALICE}/${path}`,
          headers: h === undefined ? {} : { authorization: h },
        })
        expect(res.statusCode, `${path} ${String(h).slice(0, 40)}`).toBe(401)
        expect(res.json()).toEqual({ error: 'AuthRequired', message: expect.any(String) })
        expect(res.headers['www-authenticate']).toBe('Bearer')
      }
    }
    // Even a malformed DID is not looked at before the token is.
    expect((await post(`/admin/repos/not-a-did/hide`, 'nope')).statusCode).toBe(401)
  })

  it('routes do not exist without ADMIN_TOKEN', async () => {
    const plain = await makeApp(db)
    try {
      const res = await plain.inject({
        method: 'POST',
        url: `/admin/repos/${ALICE}/hide`,
        headers: { authorization: 'Bearer x' },
      })
      expect(res.statusCode).toBe(404)
      expect(isErrorShape(res.json())).toBe(true)
    } finally {
      await plain.close()
    }
  })

  it('documents the admin routes when they exist', async () => {
    const doc = (await app.inject('/openapi.json')).json()
    expect(doc.paths['/admin/repos/{did}/hide'].post.security).toEqual([{ bearer: [] }])
  })
})

describe('hide and unhide', () => {
  it('hide withdraws a repo from lookups, lists, agents, stats and the feed; unhide restores it', async () => {
    const lookup = `/v1/prompts/${ALICE}/${s.alice.ok}`
    const before = (await app.inject(lookup)).json()
    const statsBefore = (await app.inject('/v1/stats')).json()
    const lastSeq = async () => {
      const lines = (await app.inject('/v1/changes?limit=10000')).body.trim().split('\n')
      return JSON.parse(lines.at(-1)!).seq as number
    }
    const seqBefore = await lastSeq()

    const hide = await post(`/admin/repos/alice.test/hide`)
    expect(hide.statusCode).toBe(200)
    expect(hide.json()).toMatchObject({ did: ALICE, hidden: true })
    expect(hide.json().changes).toBeGreaterThan(0)
    expect((await app.inject(lookup)).statusCode).toBe(404)
    expect((await app.inject(`/v1/conversations/${ALICE}/${s.alice.ok}`)).statusCode).toBe(404)
    expect((await app.inject(`/v1/prompts?did=${ALICE}`)).json().items).toEqual([])
    const list = (await app.inject('/v1/prompts?limit=100')).json().items as Array<{ did: string }>
    expect(list.some((i) => i.did === ALICE)).toBe(false)
    // The agent record is alice's (hidden) but bob's prompts still name it.
    expect((await app.inject(`/v1/agents/${ALICE}/agentrkey`)).json()).toMatchObject({
      agent: null,
      prompts: { total: 8 },
    })
    const stats = (await app.inject('/v1/stats')).json()
    expect(stats.prompts).toBe(statsBefore.prompts - 7)
    const feed = (await app.inject(`/v1/changes?since=${seqBefore}`)).body
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    expect(feed.length).toBe(hide.json().changes)
    expect(
      feed.every(
        (l: { op: string; uri: string }) => l.op === 'delete' && l.uri.startsWith(`at://${ALICE}/`),
      ),
    ).toBe(true)
    // Hiding twice changes nothing and logs nothing.
    expect((await post(`/admin/repos/${ALICE}/hide`)).json().changes).toBe(0)

    const unhide = await post(`/admin/repos/${ALICE}/unhide`)
    expect(unhide.json()).toMatchObject({ did: ALICE, hidden: false, changes: hide.json().changes })
    expect((await app.inject(lookup)).json()).toEqual({ ...before, indexedAt: expect.any(String) })
    expect((await app.inject('/v1/stats')).json().prompts).toBe(statsBefore.prompts)
  })

  it('can hide a DID before anything of it is indexed', async () => {
    const res = await post(`/admin/repos/did:plc:notyetseenaaaaaaaaaaaaaa/hide`)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ hidden: true, changes: 0 })
  })

  it('bad DIDs are 400, unknown handles 404', async () => {
    const bad = await post(
      `/admin/repos/${encodeURIComponent("did:plc:x'; DROP TABLE accounts; --")}/hide`,
    )
    expect(bad.statusCode).toBe(400)
    expect(bad.json().message).toMatch(/did/)
    expect((await post(`/admin/repos/nobody.test/hide`)).statusCode).toBe(404)
  })
})

describe('resync', () => {
  it('calls the injected resync with the resolved DID', async () => {
    const res = await post(`/admin/repos/alice.test/resync`)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ did: ALICE, resynced: true })
    expect(resynced).toEqual([ALICE])
  })

  it('reports a failed resync to the operator', async () => {
    const res = await post(`/admin/repos/${BOB}/resync`)
    expect(res.statusCode).toBe(500)
    expect(res.json()).toEqual({
      error: 'InternalServerError',
      message: expect.stringMatching(/PDS unreachable/),
    })
  })

  it('is a 400 where no resync is available', async () => {
    const noResync = await makeApp(db, { ADMIN_TOKEN: TOKEN })
    try {
      const res = await noResync.inject({
        method: 'POST',
        url: `/admin/repos/${ALICE}/resync`,
        headers: { authorization: `Bearer ${TOKEN}` },
      })
      expect(res.statusCode).toBe(400)
      expect(res.json()).toEqual({
        error: 'InvalidRequest',
        message: expect.stringMatching(/resync is not available/),
      })
    } finally {
      await noResync.close()
    }
  })
})
