import { afterAll, beforeAll, beforeEach } from 'vitest'
import type { Database } from '../../src/db/client.ts'
import type { IndexerDeps } from '../../src/indexer/apply.ts'
import { createTestDatabase } from './db.ts'
import { indexerDeps, World } from './events.ts'

export interface IndexerDb {
  db: Database
  deps: IndexerDeps
  w: World
}

/**
 * Registers the hooks of a file (or describe block) that applies events straight to the
 * indexing core: one database for all its tests, the deps over it and one World, closed
 * after. `onReady` hands them to the file's variables. `eachTest`, when given, runs before
 * every test with a fresh number, for repos of their own: tests share the database but
 * never each other's rows.
 */
export function useIndexerDb(onReady: (x: IndexerDb) => void, eachTest?: (n: number) => void) {
  let db: Database | undefined
  let n = 0
  beforeAll(async () => {
    db = await createTestDatabase()
    onReady({ db, deps: indexerDeps(db), w: new World() })
  })
  afterAll(async () => db?.close())
  if (eachTest) beforeEach(() => eachTest(++n))
}
