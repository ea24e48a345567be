import { describe, expect, it } from 'vitest'
import { apply, NSIDS } from '../helpers/events.ts'
import { AGENT_RKEY, ALICE, agentUri, BOB, CAROL, type Seeded, useSeededApp } from './fixtures.ts'

let s: Seeded
const get = useSeededApp({}, (x) => {
  ;({ s } = x)
})

describe('GET /v1/prompts (lists)', () => {
  const visibleKeys = () => {
    const alice = Object.values(s.alice).map((rkey) => ({ did: ALICE, rkey }))
    const bob = s.bobRkeys.map((rkey) => ({ did: BOB, rkey }))
    return [...alice, ...bob].sort((a, b) =>
      a.rkey === b.rkey ? (a.did < b.did ? -1 : 1) : a.rkey < b.rkey ? 1 : -1,
    )
  }

  const walk = async (query: string, limit: number, start?: string) => {
    const seen: Array<{ did: string; rkey: string }> = []
    let cursor: string | undefined = start
    let pages = 0
    do {
      const r = await get(`/v1/prompts?limit=${limit}${query}${cursor ? `&cursor=${cursor}` : ''}`)
      expect(r.status).toBe(200)
      expect(r.body.items.length).toBeLessThanOrEqual(limit)
      seen.push(
        ...r.body.items.map((i: { did: string; rkey: string }) => ({ did: i.did, rkey: i.rkey })),
      )
      cursor = r.body.cursor
      pages++
    } while (cursor && pages < 100)
    return seen
  }

  it('pages in (rkey desc, did) order with an opaque cursor, absent on the last page', async () => {
    const all = visibleKeys()
    expect(await walk('', 4)).toEqual(all)
    expect(await walk('', 100)).toEqual(all)
    const last = await get(`/v1/prompts?limit=100`)
    expect(last.body.cursor).toBeUndefined()
    const def = await get('/v1/prompts')
    expect(def.body.items.length).toBe(all.length) // default 50 covers them
  })

  it('items leave out content and coreMemory and carry contentBytes', async () => {
    const r = await get(`/v1/prompts?did=${ALICE}&limit=100`)
    for (const item of r.body.items) {
      expect(item.record.content).toBeUndefined()
      expect(item.record.coreMemory).toBeUndefined()
      expect(item.record.$type).toBe(NSIDS.prompt)
      expect(typeof item.contentBytes).toBe('number')
    }
    const ok = r.body.items.find((i: { rkey: string }) => i.rkey === s.alice.ok)
    const full = (await get(`/v1/prompts/${ALICE}/${s.alice.ok}`)).body
    expect(ok.contentBytes).toBe(Buffer.byteLength(full.record.content, 'utf8'))
  })

  it('filters by flag (and ok), did or handle, and agent; hidden repos never appear', async () => {
    const flagged = async (q: string) =>
      (await get(`/v1/prompts?limit=100&${q}`)).body.items as Array<{
        did: string
        rkey: string
        flags: string[]
      }>
    expect((await flagged('flag=orphaned')).map((i) => i.rkey)).toEqual([s.alice.orphaned])
    for (const f of ['mismatched', 'staleTemplate', 'coreMemoryDetached', 'invalid']) {
      const items = await flagged(`flag=${f}`)
      expect(items.length, f).toBeGreaterThan(0)
      for (const i of items) expect(i.flags).toContain(f)
    }
    const ok = await flagged('flag=ok')
    expect(ok.every((i) => i.flags.length === 0)).toBe(true)
    const stats = (await get('/v1/stats')).body
    expect(ok.length).toBe(stats.flags.ok)
    expect((await flagged(`did=${BOB}`)).length).toBe(12)
    expect(await flagged('did=bob.test')).toEqual(await flagged(`did=${BOB}`))
    expect(await flagged('did=nobody.test')).toEqual([])
    expect(await flagged(`did=${CAROL}`)).toEqual([])
    const byAgent = await flagged(`agent=${encodeURIComponent(agentUri(ALICE, AGENT_RKEY))}`)
    expect(byAgent.length).toBe(7 + 8) // alice's own, and bob's naming it; carol is hidden
    expect(byAgent.some((i) => i.did === CAROL)).toBe(false)
    const both = await flagged(
      `agent=${encodeURIComponent(agentUri(ALICE, AGENT_RKEY))}&did=${BOB}&flag=ok`,
    )
    expect(both.length).toBe(8)
    expect((await flagged(`agent=${encodeURIComponent(agentUri(BOB, 'ghost'))}`)).length).toBe(4)
  })

  it('pages stay stable while new prompts are indexed', async () => {
    const { w, deps } = s
    const first = await get('/v1/prompts?limit=5')
    const { apply } = await import('../helpers/events.ts')
    const fresh = w.tid()
    await apply(deps, [w.prompt({ did: BOB, rkey: fresh })])
    const rest = await walk('', 5, first.body.cursor)
    const expected = visibleKeys().slice(5)
    // The new prompt sorts first (a newer TID), so it is not on later pages: nothing repeats or goes missing.
    expect(rest.slice(0, expected.length)).toEqual(expected)
    s.bobRkeys.push(fresh)
  })

  it('the list form follows every write: a recompile shows its new fields, a non-object stays', async () => {
    // Last: it adds prompts the tests above would count. The cut record is a generated
    // column: Postgres recomputes it on each upsert.
    const byRkey = async (did: string, rkey: string) =>
      (await get(`/v1/prompts?did=${did}&limit=100`)).body.items.find(
        (i: { rkey: string }) => i.rkey === rkey,
      )
    const full = (await get(`/v1/prompts/${ALICE}/${s.alice.recompiled}`)).body.record
    const { content: _c, coreMemory: _m, ...cut } = full
    expect((await byRkey(ALICE, s.alice.recompiled)).record).toEqual(cut)
    expect(cut.note).toBe('third')

    const rkey = s.w.tid()
    await apply(s.deps, [
      s.w.commit({ did: ALICE, collection: NSIDS.prompt, rkey, record: ['not', 'an', 'object'] }),
    ])
    const odd = await byRkey(ALICE, rkey)
    expect(odd.record).toEqual(['not', 'an', 'object'])
    expect(odd.flags).toContain('invalid')
  })
})
