import { describe, expect, it } from 'vitest'
import { AnswerCache } from '../../src/api/answer-cache.ts'
import type { Database } from '../../src/db/client.ts'
import { countPromptsByFlag } from '../../src/db/read/prompts.ts'
import { createTestDatabase } from '../helpers/db.ts'
import { apply, NSIDS } from '../helpers/events.ts'
import { ALICE, makeApp, seed } from './fixtures.ts'

// The answer cache serves hot prompts without a query, and never past a change: in the
// writing process a commit is visible on the very next request. (Other processes:
// test/cli/answer-cache-replicas.test.ts.)

describe('AnswerCache', () => {
  it('is bounded by bytes (LRU), expires, drops by repo and refuses fills older than a change', () => {
    let now = 0
    const cache = new AnswerCache({ maxBytes: 10, ttlMs: 100, now: () => now })
    cache.trustUntil(1_000)
    cache.set('a', 'aaaa', ['did:a'], cache.generation)
    cache.set('b', 'bbbb', ['did:b'], cache.generation)
    expect(cache.get('a')?.payload.toString()).toBe('aaaa') // a is now the most recently used
    cache.set('c', 'cccc', ['did:c'], cache.generation)
    expect(cache.get('b')).toBeUndefined()
    expect(cache.bytes).toBe(8)
    const before = cache.generation
    cache.invalidateRepos(['did:a'])
    expect(cache.get('a')).toBeUndefined()
    cache.set('a', 'stale', ['did:a'], before)
    expect(cache.get('a')).toBeUndefined()
    now = 101
    expect(cache.get('c')).toBeUndefined()
    cache.set('d', 'dd', ['did:d'], cache.generation)
    expect(cache.get('d')?.etag).toMatch(/^W\/"/)
    now = 1_000
    expect(cache.get('d')).toBeUndefined() // trust ran out: no hits until the next poll
  })

  it('spreads the expiry of entries filled together over the jitter, never past the TTL', () => {
    let now = 0
    const draws = [0, 0.5, 1]
    const cache = new AnswerCache({
      maxBytes: 100,
      ttlMs: 100,
      ttlJitter: 0.5,
      now: () => now,
      random: () => draws.shift() ?? 0,
    })
    cache.trustUntil(1_000)
    for (const key of ['full', 'three-quarters', 'half']) cache.set(key, key, ['did:a'], 0)
    const alive = () => ['full', 'three-quarters', 'half'].filter((k) => cache.get(k))
    now = 50
    expect(alive()).toEqual(['full', 'three-quarters', 'half'])
    now = 51
    expect(alive()).toEqual(['full', 'three-quarters'])
    now = 76
    expect(alive()).toEqual(['full'])
    now = 101
    expect(alive()).toEqual([])
  })
})

/** `base` with the calls of one of its statement methods counted. */
function counting(base: Database, method: 'read' | 'rows'): { db: Database; calls: () => number } {
  let calls = 0
  const original = base[method] as (...args: unknown[]) => Promise<unknown>
  const db = {
    ...base,
    [method]: (...args: unknown[]) => {
      calls++
      return original(...args)
    },
  } as Database
  return { db, calls: () => calls }
}

/** Hits start once the first poll of the change log vouched for the cache. */
async function untilServedWithout(calls: () => number, request: () => Promise<unknown>) {
  await expect
    .poll(
      async () => {
        const n = calls()
        await request()
        return calls() - n
      },
      { timeout: 30_000, interval: 100 },
    )
    .toBe(0)
}

describe('the answer cache in the writing process', () => {
  it('serves a repeated lookup without a query, and a commit on the very next request', async () => {
    const base = await createTestDatabase()
    const { db, calls: reads } = counting(base, 'read')
    const s = await seed(base)
    const app = await makeApp(db)
    try {
      const url = `/v1/prompts/${ALICE}/${s.alice.ok}`
      const first = await app.inject(url)
      expect(first.statusCode).toBe(200)
      await untilServedWithout(reads, () => app.inject(url))
      const hit = await app.inject(url)
      expect(hit.body).toBe(first.body)
      expect(hit.headers.etag).toBe(first.headers.etag)
      expect(
        (await app.inject({ url, headers: { 'if-none-match': hit.headers.etag } })).statusCode,
      ).toBe(304)

      // A recompile: the next request shows the new CID, no wait.
      await apply(s.deps, [
        s.w.prompt({ did: ALICE, rkey: s.alice.ok, op: 'update', fields: { note: 'recompiled' } }),
      ])
      const next = await app.inject(url)
      expect(next.json().cid).not.toBe(first.json().cid)
      expect(next.headers.etag).not.toBe(first.headers.etag)

      // A takedown: the next request is a 404, and so is the list page cached before.
      const list = (await app.inject(`/v1/prompts?did=${ALICE}`)).json().items
      expect(list.length).toBeGreaterThan(0)
      await apply(s.deps, [
        s.w.account({ did: ALICE, active: false, status: 'takendown', seq: 50 }),
      ])
      expect((await app.inject(url)).statusCode).toBe(404)
      expect((await app.inject(`/v1/prompts?did=${ALICE}`)).json().items).toEqual([])
    } finally {
      await app.close()
      await base.close()
    }
  }, 120_000)

  it('XRPC lookups and pages share the REST answers: no query once warm, a commit on the next call', async () => {
    const base = await createTestDatabase()
    const { db, calls: reads } = counting(base, 'read')
    const s = await seed(base)
    const app = await makeApp(db)
    const xrpc = (method: string, qs: string) =>
      app.inject(`/xrpc/xyz.quasigod.lab.letta.appview.${method}?${qs}`)
    try {
      const pairs: Array<[string, () => Promise<{ body: string; statusCode: number }>]> = [
        [
          `/v1/prompts/${ALICE}/${s.alice.ok}`,
          () => xrpc('getPrompt', `did=${ALICE}&rkey=${s.alice.ok}`),
        ],
        [
          `/v1/prompts/${ALICE}/${s.alice.ok}`,
          () => xrpc('getPromptByUri', `uri=at://${ALICE}/${NSIDS.prompt}/${s.alice.ok}`),
        ],
        [`/v1/prompts?did=${ALICE}`, () => xrpc('listPrompts', `did=${ALICE}`)],
        [
          `/v1/conversations/${ALICE}/${s.alice.ok}`,
          () => xrpc('getConversation', `did=${ALICE}&rkey=${s.alice.ok}`),
        ],
      ]
      for (const [rest, call] of pairs) {
        const restAnswer = await app.inject(rest)
        expect(restAnswer.statusCode, rest).toBe(200)
        await untilServedWithout(reads, call)
        const hit = await call()
        expect(hit.statusCode).toBe(200)
        expect(JSON.parse(hit.body), rest).toEqual(restAnswer.json())
      }
      // A recompile: the next XRPC call shows the new CID, no wait.
      const before = JSON.parse((await pairs[0][1]()).body).cid
      await apply(s.deps, [
        s.w.prompt({ did: ALICE, rkey: s.alice.ok, op: 'update', fields: { note: 'recompiled' } }),
      ])
      expect(JSON.parse((await pairs[0][1]()).body).cid).not.toBe(before)
    } finally {
      await app.close()
      await base.close()
    }
  }, 120_000)

  it('answers /v1/stats from the kept counts: no scan, and a takedown on the next request', async () => {
    const base = await createTestDatabase()
    // The counts come from visible_counts (db/read/visible-counts.ts); a `rows` statement
    // would be a scan (countPromptsByFlag is the only one the stats code has).
    const { db, calls: scans } = counting(base, 'rows')
    const s = await seed(base)
    const app = await makeApp(db)
    const counts = async () => {
      const { ingest, ...rest } = (await app.inject('/v1/stats')).json()
      expect(ingest).toMatchObject({ cursor: null })
      return rest
    }
    try {
      const first = await counts()
      expect(first.prompts).toBeGreaterThan(0)
      await apply(s.deps, [
        s.w.account({ did: ALICE, active: false, status: 'takendown', seq: 50 }),
      ])
      const after = await counts()
      expect(scans()).toBe(0)
      expect(after.prompts).toBeLessThan(first.prompts)
      const scanned = await countPromptsByFlag(base)
      expect({ prompts: after.prompts, flags: after.flags }).toEqual({
        prompts: scanned.total,
        flags: scanned.flags,
      })
    } finally {
      await app.close()
      await base.close()
    }
  }, 120_000)
})
