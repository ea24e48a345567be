import { beforeAll, describe, expect, it } from 'vitest'
import { queryOf, XRPC_NAMESPACE } from '../../src/api/catalog/lexicons.ts'
import { LIST_SORTS, type ListSort } from '../../src/model/list-sort.ts'
import { apply } from '../helpers/events.ts'
import { BOB, type Seeded, useSeededApp } from './fixtures.ts'

// The orders of a prompt list (`sort`, issue 42), each checked against an order this file
// computes from the items themselves: a whole list in one page, then walked a few rows at a
// time (every row once, in order), by REST and XRPC, for lists and search; a cursor of one
// order used with another, or a sort the lexicon does not name, is the same 400 by both.

const DAVE = `did:plc:${'dave'.padEnd(24, 'd')}`

let s: Seeded
const get = useSeededApp({}, (x) => {
  ;({ s } = x)
})

interface Item {
  did: string
  rkey: string
  record: { compiledAt?: unknown }
  recompiles: number
  indexedAt: string
  contentBytes: number | null
}

// Prompts whose compile times, sizes, recompile counts and index times disagree with their
// record keys' order, each batch indexed after the one before it.
beforeAll(async () => {
  const { w, deps } = s
  const rkeys = Array.from({ length: 6 }, () => w.tid())
  const fields: Array<Record<string, unknown>> = [
    { compiledAt: w.iso(-86_400e6) }, // compiled a day before the others
    { compiledAt: 'yesterday' }, // not a datetime: last when sorted by compile time
    { content: `${'x'.repeat(5000)}<memory>persona: helpful</memory>` },
    { compiledAt: undefined }, // none at all
    { content: `${'é'.repeat(1000)}<memory>persona: helpful</memory>` }, // 2 bytes a letter
    { content: 42 }, // no content: last when sorted by size
  ]
  for (const [i, rkey] of rkeys.entries())
    await apply(deps, [
      // Later keys compiled earlier, unless the fields say otherwise.
      w.prompt({ did: DAVE, rkey, fields: { compiledAt: w.iso(-i * 3600e6), ...fields[i] } }),
    ])
  // The oldest key, recompiled three times, is the most recompiled and the latest indexed.
  for (const n of [1, 2, 3])
    await apply(deps, [
      w.prompt({ did: DAVE, rkey: rkeys[0]!, op: 'update', fields: { note: `recompile ${n}` } }),
    ])
})

/** compiledAt as the index reads it (a strict datetime with a zone), or null. */
function compiledMs(v: unknown): number | null {
  const strict = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/
  return typeof v === 'string' && strict.test(v) ? Date.parse(v) : null
}

/** Each order's key of an item; null ranks last. */
const KEY: Record<Exclude<ListSort, 'created'>, (i: Item) => number | null> = {
  compiled: (i) => compiledMs(i.record.compiledAt),
  indexed: (i) => Date.parse(i.indexedAt),
  recompiles: (i) => i.recompiles,
  size: (i) => i.contentBytes,
}

const desc = (a: string, b: string) => (a < b ? 1 : a > b ? -1 : 0)

/** `items` in `sort`'s order, as SPEC 6 states it. */
function ordered(items: Item[], sort: ListSort): string[] {
  const byKey = (a: Item, b: Item): number => {
    if (sort === 'created') return desc(a.rkey, b.rkey) || -desc(a.did, b.did)
    const [ka, kb] = [KEY[sort](a) ?? -Infinity, KEY[sort](b) ?? -Infinity]
    return kb - ka || desc(a.did, b.did) || desc(a.rkey, b.rkey)
  }
  return [...items].sort(byKey).map((i) => `${i.did}/${i.rkey}`)
}

const keys = (items: Item[]) => items.map((i) => `${i.did}/${i.rkey}`)

/** Every page of `path` (with its query) `limit` rows at a time. */
async function walk(path: string, limit: number): Promise<string[]> {
  const seen: string[] = []
  let cursor: string | undefined
  for (let pages = 0; pages < 200; pages++) {
    const r = await get(`${path}&limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`)
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    seen.push(...keys(r.body.items))
    cursor = r.body.cursor
    if (!cursor) return seen
  }
  throw new Error(`${path} did not end`)
}

const xrpc = (method: string, query: string) => get(`/xrpc/${XRPC_NAMESPACE}.${method}?${query}`)

describe('sort', () => {
  let all: Item[]
  beforeAll(async () => {
    all = (await get('/v1/prompts?limit=100')).body.items
  })

  it('the lexicons name the orders of model/list-sort.ts, created by default', () => {
    for (const method of ['listPrompts', 'searchPrompts']) {
      const prop = queryOf(`${XRPC_NAMESPACE}.${method}`).parameters?.properties.sort
      expect(prop).toMatchObject({ type: 'string', enum: [...LIST_SORTS], default: 'created' })
    }
  })

  it('the orders differ on this data, so each check below tells them apart', () => {
    expect(all.length).toBeGreaterThan(20)
    const orders = LIST_SORTS.map((sort) => ordered(all, sort).join(' '))
    expect(new Set(orders).size).toBe(LIST_SORTS.length)
    const dave = all.filter((i) => i.did === DAVE)
    expect(dave.filter((i) => i.record.compiledAt === undefined)).toHaveLength(1)
    expect(dave.filter((i) => i.contentBytes === null)).toHaveLength(1)
    expect(Math.max(...all.map((i) => i.recompiles))).toBe(3)
  })

  it('each order is the one computed from the items, in one page and walked three rows at a time', async () => {
    for (const sort of LIST_SORTS) {
      const want = ordered(all, sort)
      const one = await get(`/v1/prompts?sort=${sort}&limit=100`)
      expect(keys(one.body.items), sort).toEqual(want)
      expect(one.body.cursor).toBeUndefined()
      expect(await walk(`/v1/prompts?sort=${sort}`, 3), sort).toEqual(want)
      expect(await walk(`/v1/prompts?sort=${sort}`, 1), sort).toEqual(want)
    }
    expect(keys((await get('/v1/prompts?limit=100')).body.items)).toEqual(ordered(all, 'created'))
  })

  it('orders hold under filters: a repo, a flag', async () => {
    const bob = all.filter((i) => i.did === BOB)
    const okRows = (await get('/v1/prompts?flag=ok&limit=100')).body.items as Item[]
    for (const sort of LIST_SORTS) {
      expect(await walk(`/v1/prompts?did=bob.test&sort=${sort}`, 4), sort).toEqual(
        ordered(bob, sort),
      )
      expect(await walk(`/v1/prompts?flag=ok&sort=${sort}`, 2), sort).toEqual(ordered(okRows, sort))
    }
  })

  it('XRPC listPrompts and searchPrompts answer as REST does, page by page', async () => {
    for (const sort of LIST_SORTS) {
      let cursor = ''
      do {
        const q = `sort=${sort}&limit=5${cursor ? `&cursor=${cursor}` : ''}`
        const rest = await get(`/v1/prompts?${q}`)
        expect((await xrpc('listPrompts', q)).body, sort).toEqual(rest.body)
        cursor = rest.body.cursor ?? ''
      } while (cursor)
      const hits = (await get(`/v1/search?q=agent&limit=100`)).body.items as Item[]
      expect(await walk(`/v1/search?q=agent&sort=${sort}`, 4), `search ${sort}`).toEqual(
        ordered(hits, sort),
      )
      const viaXrpc = await xrpc('searchPrompts', `q=agent&sort=${sort}&limit=100`)
      expect(keys(viaXrpc.body.items), `search ${sort}`).toEqual(ordered(hits, sort))
    }
  })

  it('a sort the lexicon does not name is the same 400 InvalidRequest by REST and XRPC', async () => {
    for (const bad of ['newest', 'Size', 'size,created']) {
      const rest = await get(`/v1/prompts?sort=${encodeURIComponent(bad)}`)
      expect(rest.status).toBe(400)
      expect(rest.body.error).toBe('InvalidRequest')
      expect(rest.body.message).toContain('sort')
      const viaXrpc = await xrpc('listPrompts', `sort=${encodeURIComponent(bad)}`)
      expect(viaXrpc.status).toBe(400)
      expect(viaXrpc.body).toEqual(rest.body)
    }
  })

  it('a cursor of one order used with another is the same 400 by REST and XRPC, naming both', async () => {
    const cursorOf = async (sort: ListSort) =>
      (await get(`/v1/prompts?sort=${sort}&limit=2`)).body.cursor as string
    for (const from of LIST_SORTS) {
      const cursor = await cursorOf(from)
      expect(cursor).toBeTruthy()
      for (const to of LIST_SORTS.filter((x) => x !== from)) {
        // A cursor without sort continues `created`, the default.
        const q = to === 'created' ? `cursor=${cursor}` : `sort=${to}&cursor=${cursor}`
        const rest = await get(`/v1/prompts?${q}`)
        expect(rest.status, `${from} -> ${to}`).toBe(400)
        expect(rest.body).toEqual({
          error: 'InvalidRequest',
          message: expect.stringContaining(`cursor belongs to sort=${from}, not sort=${to}`),
        })
        expect((await xrpc('listPrompts', q)).body).toEqual(rest.body)
        expect((await get(`/v1/search?q=agent&${q}`)).body).toEqual(rest.body)
      }
    }
  })

  it('a cursor whose sort key is not an integer is malformed', async () => {
    const cursor = (parts: unknown[]) => Buffer.from(JSON.stringify(parts)).toString('base64url')
    const { rkey } = all[0]!
    for (const bad of [
      [rkey, DAVE, 'size', '1.5'],
      [rkey, DAVE, 'size', 12],
      [rkey, DAVE, 'size', "1' OR 1=1"],
      [rkey, DAVE, 'size', '2147483648'], // beyond the column's integers
      [rkey, DAVE, 'compiled', '-9999999999999999999'],
      [rkey, DAVE, 'indexed', '-9000000000000000000'], // before year 1
      [rkey, DAVE, 'bogus', '12'],
      [rkey, DAVE, 'created', '12'],
      [rkey, DAVE, 'size'],
    ]) {
      const sort = LIST_SORTS.find((x) => x === bad[2]) ?? 'size'
      const q = `sort=${sort}&cursor=${cursor(bad)}`
      const rest = await get(`/v1/prompts?${q}`)
      expect(rest.status, JSON.stringify(bad)).toBe(400)
      expect(rest.body.message).toContain('cursor is malformed')
      expect((await xrpc('listPrompts', q)).body).toEqual(rest.body)
    }
    // The ends of a range are keys like any other.
    const latest = cursor([rkey, DAVE, 'indexed', '253402300799999999'])
    expect((await get(`/v1/prompts?sort=indexed&cursor=${latest}`)).body.items).toHaveLength(
      all.length,
    )
    const oldest = cursor([rkey, DAVE, 'compiled', '-9223372036854775808'])
    expect((await get(`/v1/prompts?sort=compiled&cursor=${oldest}`)).status).toBe(200)
    const ok = await get(`/v1/prompts?sort=size&cursor=${cursor([rkey, DAVE, 'size', '100'])}`)
    expect(ok.status).toBe(200)
    expect(ok.body.items.every((i: Item) => (i.contentBytes ?? -1) <= 100)).toBe(true)
  })
})
