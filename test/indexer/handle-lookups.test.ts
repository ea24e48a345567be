import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Database } from '../../src/db/client.ts'
import { applyBatch } from '../../src/indexer/apply.ts'
import { HandleLookups } from '../../src/indexer/handle-lookups.ts'
import { testContext } from '../helpers/context.ts'
import { createTestDatabase } from '../helpers/db.ts'
import { indexerDeps, NSIDS, World } from '../helpers/events.ts'

let db: Database
beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(async () => db?.close())

const handleOf = async (did: string) =>
  (await db.rows<{ handle: string | null }>(sql`SELECT handle FROM accounts WHERE did = ${did}`))[0]
    ?.handle

describe('handles of repos seen for the first time', () => {
  it('are looked up once, in the background, and stored when verified', async () => {
    const w = new World()
    const conversation = (did: string) =>
      w.conversation({ did, rkey: w.tid(), record: { $type: NSIDS.conversation } })
    const deps = indexerDeps(db)
    // A local resolver: alice's handle verifies, bob's does not.
    const known: Record<string, string> = { 'did:plc:alicehandleaaaaaaaaaaaa': 'alice.test' }
    const asked: string[] = []
    const lookups = new HandleLookups(testContext(db), async (did) => {
      asked.push(did)
      return known[did] ?? null
    })
    const first = await applyBatch(
      deps,
      [
        conversation('did:plc:alicehandleaaaaaaaaaaaa'),
        conversation('did:plc:bobhandleaaaaaaaaaaaaa'),
      ],
      null,
    )
    expect(first.newDids.sort()).toEqual([
      'did:plc:alicehandleaaaaaaaaaaaa',
      'did:plc:bobhandleaaaaaaaaaaaaa',
    ])
    lookups.enqueue(first.newDids)
    await lookups.idle()
    expect(await handleOf('did:plc:alicehandleaaaaaaaaaaaa')).toBe('alice.test')
    expect(await handleOf('did:plc:bobhandleaaaaaaaaaaaaa')).toBeNull()
    // Known repos are not new again.
    const again = await applyBatch(deps, [conversation('did:plc:alicehandleaaaaaaaaaaaa')], null)
    expect(again.newDids).toEqual([])
    await lookups.stop()
    expect(asked.sort()).toEqual([
      'did:plc:alicehandleaaaaaaaaaaaa',
      'did:plc:bobhandleaaaaaaaaaaaaa',
    ])
  })

  it('never queue more than the bound', async () => {
    let calls = 0
    const lookups = new HandleLookups(
      testContext(db),
      async () => {
        calls++
        await new Promise((r) => setTimeout(r, 5))
        return null
      },
      { concurrency: 1, maxQueue: 3 },
    )
    lookups.enqueue(Array.from({ length: 10 }, (_, i) => `did:plc:bound${i}aaaaaaaaaaaaaaaa`))
    await lookups.idle()
    expect(calls).toBe(3) // the queue holds three; the other seven were dropped
  })
})
