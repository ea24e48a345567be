import { sql } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import type { Database } from '../../src/db/client.ts'
import { getCursor, getStats } from '../../src/db/read/stats.ts'
import { applyBatch, type IndexerDeps } from '../../src/indexer/apply.ts'
import { timeCursor } from '../../src/model/cursor.ts'
import { analyzePrompt } from '../../src/model/prompt-record.ts'
import { apply, NSIDS, type World } from '../helpers/events.ts'
import { getPrompt } from '../helpers/get-prompt.ts'
import { useIndexerDb } from '../helpers/indexer-db.ts'

const { prompt: P, conversation: C, agent: A } = NSIDS
let db: Database
let deps: IndexerDeps
let w: World
let n = 0
let did: string
useIndexerDb(
  (x) => {
    ;({ db, deps, w } = x)
  },
  (i) => {
    n = i
    did = `did:plc:events${n}aaaaaaaaaaaaaaa`
  },
)

const changeCount = async () =>
  Number((await db.rows<{ n: number }>(sql`SELECT count(*)::int AS n FROM changes`))[0].n)
const revisions = async (d: string, rkey: string) =>
  db.rows<{ rev: string; cid: string }>(
    sql`SELECT rev, cid FROM prompt_revisions WHERE did = ${d} AND rkey = ${rkey} ORDER BY rev`,
  )

describe('replays and the rev guard', () => {
  it('replaying a whole sequence changes nothing: no recompile, no change row', async () => {
    const rkey = w.tid()
    const seq = [
      w.conversation({ did, rkey }),
      w.prompt({ did, rkey }),
      w.prompt({
        did,
        rkey,
        op: 'update',
        fields: { content: 'v2 <memory>persona: helpful</memory>' },
      }),
    ]
    await apply(deps, seq.slice(0, 2))
    await apply(deps, seq.slice(2))
    const before = await getPrompt(db, NSIDS, did, rkey)
    const changes = await changeCount()
    const replay = await apply(deps, seq)
    expect(replay.outcomes.map((o) => o.outcome)).toEqual([
      'ignored_rev',
      'ignored_rev',
      'ignored_rev',
    ])
    expect(await getPrompt(db, NSIDS, did, rkey)).toEqual(before)
    expect(before?.recompiles).toBe(1)
    expect(await changeCount()).toBe(changes)
  })

  it('an older update arriving late is ignored', async () => {
    const rkey = w.tid()
    const create = w.prompt({ did, rkey })
    const older = w.prompt({ did, rkey, op: 'update', fields: { memfsRevision: 'older' } })
    const newer = w.prompt({ did, rkey, op: 'update', fields: { memfsRevision: 'newer' } })
    await apply(deps, [create, newer])
    const r = await apply(deps, [older])
    expect(r.outcomes[0].outcome).toBe('ignored_rev')
    const p = await getPrompt(db, NSIDS, did, rkey)
    expect(p?.record).toMatchObject({ memfsRevision: 'newer' })
    expect(p?.cid).toBe(newer.cid)
  })

  it('a replayed create after a delete does not resurrect the record, even if never seen', async () => {
    const rkey = w.tid()
    const create = w.prompt({ did, rkey })
    const del = w.prompt({ did, rkey, op: 'delete' })
    // The delete arrives first (backfill and live racing): it still leaves a tombstone.
    await apply(deps, [del])
    await apply(deps, [create])
    expect(await getPrompt(db, NSIDS, did, rkey)).toBeNull()
    // Same within one batch, in order.
    const r2 = w.tid()
    const c2 = w.prompt({ did, rkey: r2 })
    const d2 = w.prompt({ did, rkey: r2, op: 'delete' })
    await apply(deps, [c2, d2, c2])
    expect(await getPrompt(db, NSIDS, did, r2)).toBeNull()
  })

  it('the ops of one commit share its rev and apply idempotently', async () => {
    const [r1, r2] = [w.tid(), w.tid()]
    const rev = w.tid()
    const ops = [
      w.conversation({ did, rkey: r1, rev }),
      w.prompt({ did, rkey: r1, rev }),
      w.prompt({ did, rkey: r2, rev }),
    ]
    const first = await apply(deps, ops)
    expect(first.outcomes.map((o) => o.outcome)).toEqual(['indexed', 'indexed', 'indexed'])
    const again = await apply(deps, ops)
    expect(again.outcomes.map((o) => o.outcome)).toEqual([
      'ignored_rev',
      'ignored_rev',
      'ignored_rev',
    ])
  })
})

describe('recompiles and history', () => {
  it('counts each new CID, keeps history, restarts after delete and keeps the old history', async () => {
    const rkey = w.tid()
    await apply(deps, [w.conversation({ did, rkey }), w.prompt({ did, rkey })])
    expect((await getPrompt(db, NSIDS, did, rkey))?.recompiles).toBe(0)
    for (let i = 1; i <= 3; i++) {
      await apply(deps, [w.prompt({ did, rkey, op: 'update', fields: { memfsRevision: `m${i}` } })])
      expect((await getPrompt(db, NSIDS, did, rkey))?.recompiles).toBe(i)
    }
    expect(await revisions(did, rkey)).toHaveLength(4)
    await apply(deps, [w.prompt({ did, rkey, op: 'delete' })])
    await apply(deps, [w.prompt({ did, rkey })])
    expect((await getPrompt(db, NSIDS, did, rkey))?.recompiles).toBe(0)
    expect(await revisions(did, rkey)).toHaveLength(5)
  })

  it('two updates of one record in one batch count twice', async () => {
    const rkey = w.tid()
    await apply(deps, [
      w.prompt({ did, rkey }),
      w.prompt({ did, rkey, op: 'update', fields: { memfsRevision: 'x' } }),
      w.prompt({ did, rkey, op: 'update', fields: { memfsRevision: 'y' } }),
    ])
    expect((await getPrompt(db, NSIDS, did, rkey))?.recompiles).toBe(2)
  })
})

describe('accounts', () => {
  it('takedown hides everywhere, reactivation shows, deleted purges and keeps tombstones', async () => {
    const rkey = w.tid()
    await apply(deps, [
      w.conversation({ did, rkey }),
      w.prompt({ did, rkey }),
      w.commit({ did, collection: A, rkey: 'agentrkey', record: { $type: A, system: 'x' } }),
    ])
    const visible = await getStats(db, { source: null, key: null })
    await apply(deps, [w.account({ did, active: false, status: 'takendown', seq: 100 })])
    expect(await getPrompt(db, NSIDS, did, rkey)).toBeNull()
    const hidden = await getStats(db, { source: null, key: null })
    expect(hidden.prompts).toBe(visible.prompts - 1)
    expect(hidden.conversations).toBe(visible.conversations - 1)
    expect(hidden.agents).toBe(visible.agents - 1)
    // An older account event is ignored.
    const stale = await apply(deps, [w.account({ did, active: true, status: null, seq: 99 })])
    expect(stale.outcomes[0].outcome).toBe('ignored_rev')
    expect(await getPrompt(db, NSIDS, did, rkey)).toBeNull()
    await apply(deps, [w.account({ did, active: true, status: null, seq: 101 })])
    expect(await getPrompt(db, NSIDS, did, rkey)).not.toBeNull()
    const create = w.commit({
      did,
      collection: P,
      rkey: w.tid(),
      record: w.promptRecord(did, rkey),
    })
    await apply(deps, [w.account({ did, active: false, status: 'deleted', seq: 102 })])
    await apply(deps, [w.account({ did, active: true, status: null, seq: 103 })])
    expect(await getPrompt(db, NSIDS, did, rkey)).toBeNull()
    // A replayed create from before the purge does not come back.
    expect((await apply(deps, [create])).outcomes[0].outcome).toBe('ignored_rev')
    const tomb = await db.rows<{ deleted: boolean }>(
      sql`SELECT deleted FROM prompts WHERE did = ${did}`,
    )
    expect(tomb.every((t) => t.deleted)).toBe(true)
  })

  it('account events of DIDs with no records are not kept', async () => {
    const stranger = `did:plc:stranger${n}aaaaaaaaaaaaa`
    const r = await apply(deps, [
      w.account({ did: stranger, active: false, status: 'takendown', seq: 5 }),
    ])
    expect(r.outcomes[0].outcome).toBe('ignored_rev')
    expect(await db.rows(sql`SELECT 1 FROM accounts WHERE did = ${stranger}`)).toHaveLength(0)
  })

  it('hidden records change while hidden and show their latest state', async () => {
    const rkey = w.tid()
    await apply(deps, [
      w.prompt({ did, rkey }),
      w.account({ did, active: false, status: 'suspended', seq: 1 }),
    ])
    await apply(deps, [w.conversation({ did, rkey })])
    await apply(deps, [w.account({ did, active: true, status: null, seq: 2 })])
    expect((await getPrompt(db, NSIDS, did, rkey))?.flags).toEqual([])
  })
})

describe('atomicity', () => {
  it('a batch that fails midway leaves no partial rows and no advanced cursor', async () => {
    const rkey = w.tid()
    const cursor = {
      source: 'replay',
      key: `/tmp/atomic-${n}`,
      cursor: timeCursor(42),
      lastEventUs: w.us,
    }
    await applyBatch(deps, [w.conversation({ did, rkey })], cursor)
    const good = w.prompt({ did, rkey })
    // A record Postgres refuses (jsonb has no \u0000) after a good one in the same batch.
    const bad = w.conversation({
      did,
      rkey: w.tid(),
      record: { $type: C, title: 'nul \u0000 inside' },
    })
    await expect(
      applyBatch(deps, [good, bad], { ...cursor, cursor: timeCursor(43) }),
    ).rejects.toThrow()
    expect(await getPrompt(db, NSIDS, did, rkey)).toBeNull()
    expect(await getCursor(db, 'replay', cursor.key)).toBe(42)
  })
})

describe('a prompt analyzed as it was queued', () => {
  it('is stored with the analysis its event carries, not analyzed again', async () => {
    const rkey = w.tid()
    const ev = w.prompt({ did, rkey })
    if (ev.kind !== 'commit') throw new Error('a commit')
    const analysis = analyzePrompt(deps.validator, deps.nsids, did, rkey, ev.record)
    // A hash no content has: only the event's analysis can have put it there.
    const marked = { ...analysis, contentHash: 'f'.repeat(64) }
    await applyBatch(deps, [w.conversation({ did, rkey }), { ...ev, analysis: marked }], null)
    const [row] = await db.rows<{ hash: string }>(
      sql`SELECT content_hash AS hash FROM prompts WHERE did = ${did} AND rkey = ${rkey}`,
    )
    expect(row.hash).toBe('f'.repeat(64))
  })
})
