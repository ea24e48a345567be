import { readFileSync } from 'node:fs'
import { sql } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import type { Database } from '../../src/db/client.ts'
import { getStats } from '../../src/db/read/stats.ts'
import { applyBatch, type IndexerDeps } from '../../src/indexer/apply.ts'
import { normalizeJetstreamEvent } from '../../src/ingest/jetstream/event.ts'
import type { IndexEvent } from '../../src/model/events.ts'
import { flagsToNames } from '../../src/model/flags.ts'
import { createTestDatabase } from '../helpers/db.ts'
import { indexerDeps, NSIDS } from '../helpers/events.ts'
import { useIndexerDb } from '../helpers/indexer-db.ts'
import { createReferenceModel } from '../helpers/reference-model.ts'
import { testTraffic } from '../helpers/traffic.ts'

// The SQL indexer against a deliberately naive in-memory model of SPEC section 3, on
// generated traffic cut into batches of random sizes: same visible state, same flags.

const collections = new Set(Object.values(NSIDS))
const MODEL_NSIDS = {
  promptNsid: NSIDS.prompt,
  conversationNsid: NSIDS.conversation,
  agentNsid: NSIDS.agent,
}

function normalize(lines: unknown[]): IndexEvent[] {
  const out: IndexEvent[] = []
  for (const line of lines) {
    const r = normalizeJetstreamEvent(line as string, { collections })
    if (!r.ok || !r.item.event) continue
    const ev = r.item.event
    // Replays carry the handle as announced: these tests have no resolver to verify it with.
    out.push(ev.kind === 'identity' ? { ...ev, handle: r.unverifiedHandle } : ev)
  }
  return out
}

async function visibleState(db: Database) {
  const prompts = await db.rows<{
    did: string
    rkey: string
    cid: string
    flags: number
    recompiles: number
  }>(
    sql`SELECT did, rkey, cid, flags, recompiles FROM prompts WHERE NOT deleted AND NOT hidden ORDER BY did, rkey`,
  )
  const others = async (t: string) =>
    db.rows<{ did: string; rkey: string; cid: string }>(
      sql`SELECT did, rkey, cid FROM ${sql.raw(t)} WHERE NOT deleted AND NOT hidden ORDER BY did, rkey`,
    )
  return {
    prompts: prompts.map((p) => ({
      did: p.did,
      rkey: p.rkey,
      cid: p.cid,
      flags: flagsToNames(Number(p.flags)).sort(),
      recompiles: Number(p.recompiles),
    })),
    conversations: await others('conversations'),
    agents: await others('agents'),
  }
}

const byKey = <T extends { did: string; rkey: string }>(xs: T[]) =>
  [...xs].sort((a, b) => (a.did + a.rkey < b.did + b.rkey ? -1 : 1)).map((x) => ({ ...x }))

let db: Database
let deps: IndexerDeps
useIndexerDb((x) => {
  ;({ db, deps } = x)
})

describe('indexer = reference model', () => {
  it('on the sample file, with the README figures', async () => {
    const lines = readFileSync(new URL('../../examples/sample.ndjson', import.meta.url), 'utf8')
      .split('\n')
      .filter(Boolean)
    const model = createReferenceModel(MODEL_NSIDS)
    for (const l of lines) {
      try {
        model.apply(JSON.parse(l))
      } catch {
        // the sample's deliberately broken lines
      }
    }
    const events = normalize(lines)
    for (let i = 0; i < events.length; i += 37)
      await applyBatch(deps, events.slice(i, i + 37), null)
    const stats = await getStats(db, { source: null, key: null })
    expect({
      prompts: stats.prompts,
      conversations: stats.conversations,
      agents: stats.agents,
      flags: stats.flags,
    }).toEqual(model.stats())
    expect(model.stats()).toMatchObject({ prompts: 54, conversations: 51, agents: 8 })
  })

  it.each([1, 2, 3])(
    'on generated traffic (seed %i), any batch cut, then replayed',
    async (seed) => {
      const fresh = await createTestDatabase()
      const d = indexerDeps(fresh)
      try {
        const gen = testTraffic({ seed, dids: 12 })
        const raw = gen.generate(2500)
        const model = createReferenceModel(MODEL_NSIDS)
        for (const e of raw) model.apply(e)
        const events = normalize(raw)
        let rnd = seed * 7919
        for (let i = 0; i < events.length; ) {
          rnd = (rnd * 1103515245 + 12345) % 2147483648
          const n = 1 + (rnd % 250)
          await applyBatch(d, events.slice(i, i + n), null)
          i += n
        }
        const want = model.visibleState()
        const got = await visibleState(fresh)
        expect(byKey(got.prompts)).toEqual(
          byKey(want.prompts.map((p) => ({ ...p, flags: [...p.flags].sort() }))),
        )
        expect(byKey(got.conversations)).toEqual(byKey(want.conversations))
        expect(byKey(got.agents)).toEqual(byKey(want.agents))
        // A reconnect replays a stretch: nothing changes, and nothing is logged as a change.
        const changes = await fresh.rows(sql`SELECT count(*)::int AS n FROM changes`)
        await applyBatch(d, events.slice(events.length - 800), null)
        expect(await visibleState(fresh)).toEqual(got)
        expect(await fresh.rows(sql`SELECT count(*)::int AS n FROM changes`)).toEqual(changes)
      } finally {
        await fresh.close()
      }
    },
    120_000,
  )
})
