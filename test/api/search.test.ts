import { describe, expect, it } from 'vitest'
import { apply, NSIDS } from '../helpers/events.ts'
import { ALICE, BOB, CAROL, isErrorShape, type Seeded, useSeededApp } from './fixtures.ts'

// GET /v1/search on the API fixtures (alice, bob, and carol taken down) plus a few prompts
// with words of their own: matches, snippets, the list filters, order and paging, and the
// bad input of issue 13 (a 10,000-character query, punctuation only, SQL-looking text).

const { prompt: P } = NSIDS
let s: Seeded
const own: Record<string, string> = {}
const get = useSeededApp({}, (x) => {
  ;({ s } = x)
})

async function seedWords() {
  const { w, deps } = s
  const texts: Record<string, [string, string]> = {
    zebra: [ALICE, 'Notes.\nThe Zebra crossing is near the café; zebras are striped.\nEnd.'],
    quokka: [BOB, `${'filler words here. '.repeat(40)}A quokka smiles. Élan vital, quokka!`],
    sql: [BOB, "Robert'); DROP TABLE prompts; -- is little Bobby Tables"],
    hidden: [CAROL, 'a zebra in a hidden repo'],
  }
  for (const [name, [did, content]] of Object.entries(texts)) {
    const rkey = w.tid()
    own[name] = rkey
    await apply(deps, [
      w.conversation({ did, rkey }),
      w.commit({
        did,
        collection: P,
        rkey,
        record: { ...w.promptRecord(did, rkey), content, coreMemory: 'x' },
      }),
    ])
  }
}

const search = async (qs: string) => {
  if (!own.zebra) await seedWords()
  return get(`/v1/search?${qs}`)
}

describe('GET /v1/search', () => {
  it('finds whole words case-insensitively, all of them, with a snippet and offsets', async () => {
    const r = await search('q=ZEBRA')
    expect(r.status).toBe(200)
    expect(r.body.items.map((i: { rkey: string }) => i.rkey)).toEqual([own.zebra])
    const item = r.body.items[0]
    expect(item).toMatchObject({ did: ALICE, uri: `at://${ALICE}/${P}/${own.zebra}` })
    expect(item.record.content).toBeUndefined()
    expect(item.reasons).toBeUndefined()
    expect(typeof item.contentBytes).toBe('number')
    const { text, matches } = item.snippet
    expect(matches.map((m: { start: number; end: number }) => text.slice(m.start, m.end))).toEqual([
      'Zebra',
    ])
    // "zebras" is another word: no stemming.
    expect((await search('q=zebras')).body.items).toHaveLength(1)
    expect((await search('q=zebra+striped')).body.items).toHaveLength(1)
    expect((await search('q=zebra+quokka')).body.items).toHaveLength(0)
  })

  it('cuts the snippet around the first match, in Unicode', async () => {
    const r = await search(`q=${encodeURIComponent('élan quokka')}`)
    expect(r.status).toBe(200)
    const { text, matches } = r.body.items[0].snippet
    expect(text.length).toBeLessThanOrEqual(300)
    expect(text).not.toMatch(
      /^filler words here\. filler words here\. filler words here\. filler words here\. filler words here\. filler/,
    )
    const found = matches.map((m: { start: number; end: number }) => text.slice(m.start, m.end))
    expect(found).toEqual(['quokka', 'Élan', 'quokka'])
  })

  it('never shows a hidden repo', async () => {
    const r = await search('q=zebra&did=' + CAROL)
    expect(r.body.items).toEqual([])
  })

  it('has the filters, order and paging of lists', async () => {
    // Every fixture prompt says "kind": search pages must be the list's pages.
    const all: string[] = []
    let cursor: string | undefined
    do {
      const r = await search(`q=kind&limit=2${cursor ? `&cursor=${cursor}` : ''}`)
      expect(r.status).toBe(200)
      expect(r.body.items.length).toBeLessThanOrEqual(2)
      all.push(...r.body.items.map((i: { did: string; rkey: string }) => `${i.did}/${i.rkey}`))
      cursor = r.body.cursor
    } while (cursor)
    const list = await get('/v1/prompts?limit=100')
    const listed = list.body.items
      .filter((i: { did: string; rkey: string }) => !Object.values(own).includes(i.rkey))
      .map((i: { did: string; rkey: string }) => `${i.did}/${i.rkey}`)
    expect(all.length).toBeGreaterThan(4)
    expect(all).toEqual(listed.filter((k: string) => all.includes(k)))
    expect(new Set(all).size).toBe(all.length)
    for (const [qs, want] of [
      ['did=' + BOB, (i: { did: string }) => i.did === BOB],
      ['did=alice.test', (i: { did: string }) => i.did === ALICE],
      ['flag=orphaned', (i: { flags: string[] }) => i.flags.includes('orphaned')],
      ['flag=ok', (i: { flags: string[] }) => i.flags.length === 0],
    ] as const) {
      const r = await search(`q=kind&${qs}`)
      expect(r.status, qs).toBe(200)
      expect(r.body.items.length, qs).toBeGreaterThan(0)
      for (const i of r.body.items) expect(want(i), qs).toBe(true)
    }
    const agent = `at://${ALICE}/${NSIDS.agent}/agentrkey`
    const byAgent = await search(`q=kind&agent=${encodeURIComponent(agent)}`)
    expect(byAgent.body.items.length).toBeGreaterThan(0)
    for (const i of byAgent.body.items) expect(i.agent.uri).toBe(agent)
    expect((await search('q=kind&did=nobody.test')).body.items).toEqual([])
  })

  it('treats SQL-looking text as words', async () => {
    const r = await search(`q=${encodeURIComponent("'); DROP TABLE prompts; --")}`)
    expect(r.status).toBe(200)
    expect(r.body.items.map((i: { rkey: string }) => i.rkey)).toEqual([own.sql])
    const again = await search('q=zebra')
    expect(again.body.items).toHaveLength(1)
    for (const q of ["' OR 1=1 --", 'a|b & !c', '<-> :* (x)', '\\m(.*)\\M']) {
      const x = await search(`q=${encodeURIComponent(q)}`)
      expect(x.status, q).toBe(200)
    }
  })

  it('refuses what is not a search cleanly', async () => {
    for (const [qs, message] of [
      [`q=${'a'.repeat(10_000)}`, /q/],
      [`q=${encodeURIComponent('!!! ... ??? --- ***')}`, /no words/],
      ['q=', /q/],
      ['', /q/],
      [`q=${Array.from({ length: 20 }, (_, i) => `w${i}`).join('+')}`, /more than 16 words/],
      [`q=${'b'.repeat(101)}`, /longer than 100/],
      ['q=kind&limit=0', /limit/],
      ['q=kind&cursor=%%%', /cursor/],
      ['q=kind&flag=nope', /flag/],
      ['q=kind&did=not%20a%20did', /did/],
      ['q=kind&agent=at://x/y/z', /agent/],
    ] as const) {
      const r = await search(qs)
      expect(r.status, qs).toBe(400)
      expect(isErrorShape(r.body), qs).toBe(true)
      expect(r.body.message, qs).toMatch(message)
    }
  })
})
