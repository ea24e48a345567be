import type { FastifyInstance } from 'fastify'
import { describe, expect, it } from 'vitest'
import { apply, NSIDS } from '../helpers/events.ts'
import {
  AGENT_RKEY,
  ALICE,
  agentUri,
  CAROL,
  conversationUri,
  isErrorShape,
  promptUri,
  type Seeded,
  useSeededApp,
} from './fixtures.ts'

let app: FastifyInstance
let s: Seeded
const get = useSeededApp({}, (x) => {
  ;({ app, s } = x)
})

describe('GET /v1/prompts/{did}/{rkey}', () => {
  it('answers the SPEC prompt shape', async () => {
    const r = await get(`/v1/prompts/${ALICE}/${s.alice.recompiled}`)
    expect(r.status).toBe(200)
    expect(r.headers['content-type']).toMatch(/^application\/json/)
    expect(Object.keys(r.body).sort()).toEqual(
      [
        'agent',
        'changed',
        'cid',
        'conversation',
        'did',
        'flags',
        'indexedAt',
        'provenance',
        'recompiles',
        'record',
        'rev',
        'reasons',
        'rkey',
        'uri',
        'validationError',
      ].sort(),
    )
    expect(r.body).toMatchObject({
      uri: promptUri(ALICE, s.alice.recompiled),
      did: ALICE,
      rkey: s.alice.recompiled,
      flags: [],
      conversation: { uri: conversationUri(ALICE, s.alice.recompiled), exists: true },
      agent: { uri: agentUri(ALICE, AGENT_RKEY), exists: true },
      recompiles: 2,
      validationError: null,
      reasons: {},
    })
    // The record comes back whole, fields the schema does not know included.
    expect(r.body.record).toMatchObject({
      $type: NSIDS.prompt,
      note: 'third',
      content: expect.any(String),
      coreMemory: expect.any(String),
    })
    expect(new Date(r.body.indexedAt).toISOString()).toBe(r.body.indexedAt)
    // The current version's anatomy is its newest revision's, by the prompt's own door.
    const revs = await get(`/v1/prompts/${ALICE}/${s.alice.recompiled}/revisions`)
    expect(revs.body.items[0].rev).toBe(r.body.rev)
    expect(r.body.changed).toEqual(revs.body.items[0].changed)
    expect(Array.isArray(r.body.changed)).toBe(true)
    // Seeded straight through applyBatch, which names no source: provenance says so.
    expect(r.body.provenance).toEqual({
      source: null,
      verified: false,
      commit: null,
      rev: r.body.rev,
    })
  })

  it('returns the stored record unchanged: escapes, unicode, numbers, nesting', async () => {
    // Through jsonb storage, the driver's parse and Fastify's serializer: whatever the
    // record holds must come back equal to what was written.
    const rkey = s.w.tid()
    const record = s.w.promptRecord(ALICE, rkey, {
      content: `quote " backslash \\ tab \t newline \n nul-free control \u0001 é 漢字 🧠 </script>`,
      nested: { list: [1, -2, 3.5, 1e21, true, null, { deep: ['x'] }], empty: {}, none: [] },
      'key with "quotes"': 'v',
    })
    await apply(s.deps, [s.w.commit({ did: ALICE, collection: NSIDS.prompt, rkey, record })])
    const r = await get(`/v1/prompts/${ALICE}/${rkey}`)
    expect(r.status).toBe(200)
    expect(r.body.record).toEqual(record)
    expect(r.body.uri).toBe(promptUri(ALICE, rkey))
    const byUri = await get(`/v1/prompts?uri=${encodeURIComponent(promptUri(ALICE, rkey))}`)
    expect(byUri.body).toEqual(r.body)
  })

  it('takes a handle the index knows for the DID', async () => {
    const byHandle = await get(`/v1/prompts/alice.test/${s.alice.ok}`)
    const byDid = await get(`/v1/prompts/${ALICE}/${s.alice.ok}`)
    expect(byHandle.status).toBe(200)
    expect(byHandle.body).toEqual(byDid.body)
    expect((await get(`/v1/prompts/ALICE.TEST/${s.alice.ok}`)).status).toBe(200)
    const unknown = await get(`/v1/prompts/nobody.test/${s.alice.ok}`)
    expect(unknown.status).toBe(404)
    expect(isErrorShape(unknown.body)).toBe(true)
  })

  it('flags and validation errors', async () => {
    expect((await get(`/v1/prompts/${ALICE}/${s.alice.orphaned}`)).body).toMatchObject({
      flags: ['orphaned'],
      conversation: { exists: false },
    })
    expect((await get(`/v1/prompts/${ALICE}/${s.alice.mismatched}`)).body.flags).toEqual([
      'mismatched',
    ])
    expect((await get(`/v1/prompts/${ALICE}/${s.alice.detached}`)).body.flags).toEqual([
      'coreMemoryDetached',
    ])
    expect((await get(`/v1/prompts/${ALICE}/${s.alice.staleTemplate}`)).body.flags).toEqual([
      'staleTemplate',
    ])
    const invalid = (await get(`/v1/prompts/${ALICE}/${s.alice.invalid}`)).body
    expect(invalid.flags).toContain('invalid')
    expect(invalid.validationError).toMatch(/compiledAt/)
  })

  it('404s for unknown records and hidden accounts, with the error shape', async () => {
    for (const url of [
      `/v1/prompts/${ALICE}/3zzzzzzzzzz22`,
      `/v1/prompts/${CAROL}/${s.carolRkey}`,
      `/v1/prompts/carol.test/${s.carolRkey}`,
    ]) {
      const r = await get(url)
      expect(r.status, url).toBe(404)
      expect(r.body.error).toBe('NotFound')
      expect(isErrorShape(r.body)).toBe(true)
    }
  })

  it('ETag and Cache-Control: a matching If-None-Match gets 304', async () => {
    const url = `/v1/prompts/${ALICE}/${s.alice.ok}`
    const first = await get(url)
    expect(first.headers['cache-control']).toBe('public, max-age=10')
    const etag = first.headers.etag as string
    expect(etag).toMatch(/^W\/"/)
    const again = await app.inject({ url, headers: { 'if-none-match': etag } })
    expect(again.statusCode).toBe(304)
    expect(again.body).toBe('')
    const other = await app.inject({
      url: `/v1/prompts/${ALICE}/${s.alice.orphaned}`,
      headers: { 'if-none-match': etag },
    })
    expect(other.statusCode).toBe(200)
  })

  it('allows any origin to read (CORS)', async () => {
    const r = await get(`/v1/prompts/${ALICE}/${s.alice.ok}`, { origin: 'https://example.com' })
    expect(r.headers['access-control-allow-origin']).toBe('*')
  })
})

describe('GET /v1/prompts?uri=', () => {
  it('takes the prompt at-uri or its conversation at-uri', async () => {
    const direct = await get(`/v1/prompts/${ALICE}/${s.alice.ok}`)
    for (const uri of [
      promptUri(ALICE, s.alice.ok),
      conversationUri(ALICE, s.alice.ok),
      `at://alice.test/${NSIDS.prompt}/${s.alice.ok}`,
    ]) {
      const r = await get(`/v1/prompts?uri=${encodeURIComponent(uri)}`)
      expect(r.status, uri).toBe(200)
      expect(r.body).toEqual(direct.body)
    }
  })

  it('404s for a conversation with no prompt in its slot, and for hidden repos', async () => {
    expect(
      (
        await get(
          `/v1/prompts?uri=${encodeURIComponent(conversationUri(ALICE, s.lonelyConversation))}`,
        )
      ).status,
    ).toBe(404)
    expect(
      (await get(`/v1/prompts?uri=${encodeURIComponent(promptUri(CAROL, s.carolRkey))}`)).status,
    ).toBe(404)
  })

  it('400s for an at-uri of another collection, or mixed with list parameters', async () => {
    const agent = await get(`/v1/prompts?uri=${encodeURIComponent(agentUri(ALICE, AGENT_RKEY))}`)
    expect(agent.status).toBe(400)
    expect(agent.body.message).toMatch(/^uri /)
    const mixed = await get(
      `/v1/prompts?uri=${encodeURIComponent(promptUri(ALICE, s.alice.ok))}&flag=ok`,
    )
    expect(mixed.status).toBe(400)
    expect(mixed.body.message).toMatch(/flag/)
  })
})
