import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Database, rows } from '../../src/db/client.ts'
import { createTestDatabase } from '../helpers/db.ts'

// Database.transaction and onCommit (db/client.ts): in-process caches distrust themselves
// on each commit, before the committer resumes; a rollback changed nothing they hold.

describe('db.transaction and onCommit', () => {
  let db: Database
  beforeAll(async () => {
    db = await createTestDatabase()
  })
  afterAll(async () => db?.close())

  const accountCount = async () =>
    Number((await db.rows<{ n: number }>(sql`SELECT count(*)::int AS n FROM accounts`))[0].n)

  it('calls each listener after a commit, before the caller resumes', async () => {
    const seen: number[] = []
    const remove = db.onCommit(() => seen.push(1))
    const result = await db.transaction(async (tx) => {
      await rows(tx, sql`INSERT INTO accounts (did, updated_at) VALUES ('did:plc:commit', now())`)
      expect(seen).toEqual([])
      return 'done'
    })
    expect(result).toBe('done')
    expect(seen).toEqual([1])
    expect(await accountCount()).toBe(1)
    remove()
    await db.transaction(async () => {})
    expect(seen).toEqual([1])
  })

  it('calls no listener when the transaction rolls back, and rethrows its error', async () => {
    let calls = 0
    const remove = db.onCommit(() => calls++)
    const before = await accountCount()
    const failure = new Error('work failed')
    await expect(
      db.transaction(async (tx) => {
        await rows(tx, sql`INSERT INTO accounts (did, updated_at) VALUES ('did:plc:gone', now())`)
        throw failure
      }),
    ).rejects.toBe(failure)
    await expect(
      db.transaction(async (tx) => {
        await rows(tx, sql`SELECT 1/0`)
      }),
    ).rejects.toThrow()
    expect(calls).toBe(0)
    expect(await accountCount()).toBe(before)
    remove()
  })
})
