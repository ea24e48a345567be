import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll } from 'vitest'
import { buildApp } from '../../src/api/app.ts'
import type { Database } from '../../src/db/client.ts'
import type { IndexerDeps } from '../../src/indexer/apply.ts'
import type { BatchEvent } from '../../src/indexer/plan.ts'
import type { IndexEvent } from '../../src/model/events.ts'
import { testContext } from '../helpers/context.ts'
import { createTestDatabase } from '../helpers/db.ts'
import { apply, indexerDeps, NSIDS, sha256, World } from '../helpers/events.ts'

// A small realistic network for the API tests, built only through the indexing core:
// alice (handle alice.test) with an agent record and prompts of every flag, bob whose
// prompts name alice's agent and an agent nobody indexed, and carol, taken down.

const { prompt: P, conversation: C, agent: A } = NSIDS

export const ALICE = 'did:plc:aliceaaaaaaaaaaaaaaaaaaa'
export const BOB = 'did:plc:bobbbbbbbbbbbbbbbbbbbbbb'
export const CAROL = 'did:plc:carolcccccccccccccccccccc'
export const AGENT_RKEY = 'agentrkey'

export interface Seeded {
  w: World
  deps: IndexerDeps
  /** rkey of each named alice prompt */
  alice: Record<
    'ok' | 'orphaned' | 'mismatched' | 'detached' | 'invalid' | 'recompiled' | 'staleTemplate',
    string
  >
  /** A conversation of alice's with no prompt in its slot. */
  lonelyConversation: string
  bobRkeys: string[]
  carolRkey: string
}

export const identity = (w: World, did: string, handle: string, seq: number): IndexEvent => ({
  kind: 'identity',
  did,
  handle,
  seq,
  timeUs: w.tick(),
})

export async function seed(db: Database): Promise<Seeded> {
  const w = new World()
  const deps = indexerDeps(db)
  const events: BatchEvent[] = [
    w.commit({
      did: ALICE,
      collection: A,
      rkey: AGENT_RKEY,
      record: { $type: A, name: 'helper', system: 'template v1' },
    }),
  ]
  const pair = (
    did: string,
    rkey: string,
    o: Record<string, unknown> = {},
    withConversation = true,
  ) => {
    if (withConversation)
      events.push(w.conversation({ did, rkey, record: { $type: C, title: `chat ${rkey}` } }))
    events.push(w.prompt({ did, rkey, fields: o }))
  }
  const alice = {} as Seeded['alice']
  alice.ok = w.tid()
  pair(ALICE, alice.ok)
  alice.orphaned = w.tid()
  pair(ALICE, alice.orphaned, {}, false)
  alice.mismatched = w.tid()
  pair(ALICE, alice.mismatched, { conversation: `at://${BOB}/${C}/${alice.mismatched}` })
  alice.detached = w.tid()
  pair(ALICE, alice.detached, { content: 'You are an agent.', coreMemory: '<memory>gone</memory>' })
  alice.invalid = w.tid()
  pair(ALICE, alice.invalid, { compiledAt: '2025-11-30T00:00:00' })
  alice.staleTemplate = w.tid()
  pair(ALICE, alice.staleTemplate, { rawSystemHash: sha256('template v0') })
  alice.recompiled = w.tid()
  pair(ALICE, alice.recompiled)
  const lonelyConversation = w.tid()
  events.push(w.conversation({ did: ALICE, rkey: lonelyConversation }))
  const bobRkeys: string[] = []
  for (let i = 0; i < 12; i++) {
    const rkey = w.tid()
    bobRkeys.push(rkey)
    // Every third names an agent that is never indexed; the rest alice's agent.
    const agent = i % 3 === 0 ? `at://${BOB}/${A}/ghost` : `at://${ALICE}/${A}/${AGENT_RKEY}`
    pair(BOB, rkey, { agent, rawSystemHash: sha256('template v1') })
  }
  const carolRkey = w.tid()
  pair(CAROL, carolRkey, { agent: `at://${ALICE}/${A}/${AGENT_RKEY}` })
  events.push(
    w.commit({ did: CAROL, collection: A, rkey: AGENT_RKEY, record: { $type: A, system: 'x' } }),
  )
  events.push(
    identity(w, ALICE, 'alice.test', 1),
    identity(w, BOB, 'bob.test', 2),
    identity(w, CAROL, 'carol.test', 3),
  )
  await apply(deps, events)
  // Two recompiles: three revisions, recompiles = 2.
  for (const note of ['second', 'third']) {
    await apply(deps, [
      w.prompt({
        did: ALICE,
        rkey: alice.recompiled,
        op: 'update',
        fields: { memfsRevision: 'rev-a', note },
      }),
    ])
  }
  await apply(deps, [w.account({ did: CAROL, active: false, status: 'takendown', seq: 10 })])
  return { w, deps, alice, lonelyConversation, bobRkeys, carolRkey }
}

export async function makeApp(
  db: Database,
  env: Record<string, string> = {},
  extra: {
    resyncRepo?: (did: string) => Promise<void>
    changesPageSize?: number
    readApi?: boolean
  } = {},
): Promise<FastifyInstance> {
  const ctx = testContext(db, { RATE_LIMIT_PER_MINUTE: '1000000', ...env })
  const app = await buildApp(ctx, { ingest: null, isReady: () => true, ...extra })
  await app.ready()
  return app
}

export interface Seeding {
  db: Database
  app: FastifyInstance
  s: Seeded
}

export interface Answer {
  status: number
  headers: Record<string, unknown>
  body: any
  raw: string
}

/**
 * Registers the file's hooks: a fresh database seeded through the indexing core and an app
 * over it, closed after the file. `onReady` hands them to the file's variables; the
 * returned `get` injects a GET and parses the JSON answer.
 */
export function useSeededApp(
  env: Record<string, string>,
  onReady: (x: Seeding) => void,
): (url: string, headers?: Record<string, string>) => Promise<Answer> {
  let current: Seeding | null = null
  beforeAll(async () => {
    const db = await createTestDatabase()
    const s = await seed(db)
    const app = await makeApp(db, env)
    current = { db, app, s }
    onReady(current)
  })
  afterAll(async () => {
    await current?.app.close()
    await current?.db.close()
  })
  return async (url, headers = {}) => {
    const res = await current!.app.inject({ method: 'GET', url, headers })
    return {
      status: res.statusCode,
      headers: res.headers,
      body: res.body ? JSON.parse(res.body) : null,
      raw: res.body,
    }
  }
}

export const promptUri = (did: string, rkey: string) => `at://${did}/${P}/${rkey}`
export const conversationUri = (did: string, rkey: string) => `at://${did}/${C}/${rkey}`
export const agentUri = (did: string, rkey: string) => `at://${did}/${A}/${rkey}`

/** An error answer has exactly the SPEC's shape. */
export function isErrorShape(body: unknown): boolean {
  const b = body as Record<string, unknown>
  return (
    typeof b === 'object' &&
    b !== null &&
    Object.keys(b).sort().join(',') === 'error,message' &&
    typeof b.error === 'string' &&
    typeof b.message === 'string'
  )
}
