import { describe, expect, it } from 'vitest'
import type { ChainEvent } from '../../src/model/events.ts'
import { apply } from '../helpers/events.ts'
import { ALICE, BOB, CAROL, isErrorShape, type Seeded, useSeededApp } from './fixtures.ts'

let s: Seeded
const get = useSeededApp({}, (x) => {
  ;({ s } = x)
})

const chain = (over: Partial<ChainEvent>): ChainEvent => ({
  kind: 'chain',
  did: ALICE,
  rev: null,
  data: null,
  commit: null,
  state: 'synchronized',
  reason: null,
  timeUs: Date.now() * 1000,
  ...over,
})

describe('GET /v1/repos/{did}', () => {
  it('answers account, sync state and counts; by DID and by handle alike', async () => {
    const r = await get(`/v1/repos/${ALICE}`)
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({
      did: ALICE,
      handle: 'alice.test',
      account: { active: true, status: null, hidden: false },
      // Seeded without the verified firehose: no chain state yet.
      sync: { state: null, rev: null, reason: null, since: null },
    })
    expect(r.body.records.prompts).toBeGreaterThan(0)
    expect(r.body.records.agents).toBe(1)
    const byHandle = await get('/v1/repos/alice.test')
    expect(byHandle.body).toEqual(r.body)
  })

  it('shows a break: desynchronized with its reason and since when, then synchronized again', async () => {
    await apply(s.deps, [chain({ rev: '3m6sm7ncxdj2b', data: 'bafyreia', commit: 'bafyreib' })])
    await apply(s.deps, [chain({ state: 'desynchronized', reason: 'prev_data' })])
    const broken = await get(`/v1/repos/${ALICE}`)
    expect(broken.body.sync).toMatchObject({
      state: 'desynchronized',
      rev: '3m6sm7ncxdj2b',
      reason: 'prev_data',
    })
    const since = broken.body.sync.since
    expect(new Date(since).toISOString()).toBe(since)
    // Still waiting: since stays where the state began.
    await apply(s.deps, [chain({ state: 'desynchronized', reason: 'prev_data' })])
    expect((await get(`/v1/repos/${ALICE}`)).body.sync.since).toBe(since)
    await apply(s.deps, [chain({ rev: '3m6sm7ndxdj2b', data: 'bafyreic', commit: 'bafyreid' })])
    const healed = await get(`/v1/repos/${ALICE}`)
    expect(healed.body.sync).toMatchObject({
      state: 'synchronized',
      rev: '3m6sm7ndxdj2b',
      reason: null,
    })
    // A stale resync (older rev) never moves the head back.
    await apply(s.deps, [chain({ rev: '3m6sm7ncxdj2b', data: 'bafyreia', commit: 'bafyreib' })])
    expect((await get(`/v1/repos/${ALICE}`)).body.sync.rev).toBe('3m6sm7ndxdj2b')
  })

  it('a hidden account is reported hidden, with no visible records counted', async () => {
    const r = await get(`/v1/repos/${CAROL}`)
    expect(r.status).toBe(200)
    expect(r.body.account).toEqual({ active: false, status: 'takendown', hidden: true })
    expect(r.body.records).toEqual({ prompts: 0, conversations: 0, agents: 0 })
    expect((await get(`/v1/repos/${BOB}`)).body.account.hidden).toBe(false)
  })

  it('404 for an unknown repo or handle, 400 for what is neither a DID nor a handle', async () => {
    const unknown = await get('/v1/repos/did:plc:nobodyaaaaaaaaaaaaaaaaaa')
    expect(unknown.status).toBe(404)
    expect(isErrorShape(unknown.body)).toBe(true)
    expect((await get('/v1/repos/nobody.test')).status).toBe(404)
    const bad = await get('/v1/repos/not%20a%20did')
    expect(bad.status).toBe(400)
    expect(bad.body.error).toBe('InvalidRequest')
  })
})
