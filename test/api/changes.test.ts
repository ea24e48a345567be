import { sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Database } from '../../src/db/client.ts'
import { applyBatch } from '../../src/indexer/apply.ts'
import { usingPostgres } from '../helpers/db.ts'
import { apply, NSIDS, World } from '../helpers/events.ts'
import { LETTA_ANATOMY, lettaRecompiles } from '../helpers/letta-recompiles.ts'
import { ALICE, CAROL, makeApp, promptUri, type Seeded, useSeededApp } from './fixtures.ts'

interface Line {
  seq: number
  op: string
  collection: string
  uri: string
  cid: string | null
  flags: string[] | null
  changed?: string[] | null
  at: string
}

let db: Database
let app: FastifyInstance
let chunky: FastifyInstance
let s: Seeded

useSeededApp({}, (x) => {
  ;({ db, app, s } = x)
})
beforeAll(async () => {
  // Three rows per query: every answer below crosses several chunks.
  chunky = await makeApp(db, {}, { changesPageSize: 3 })
})
afterAll(async () => {
  await chunky?.close()
})

async function read(a: FastifyInstance, query: string): Promise<Line[]> {
  const res = await a.inject({ url: `/v1/changes${query}` })
  expect(res.statusCode, res.body).toBe(200)
  expect(res.headers['content-type']).toMatch(/^application\/x-ndjson/)
  return res.body
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Line)
}

/** Reads from `since` to the end in pages of `limit`, the way a client resumes. */
async function drain(a: FastifyInstance, since: number, limit: number): Promise<Line[]> {
  const out: Line[] = []
  let last = since
  for (;;) {
    const page = await read(a, `?since=${last}&limit=${limit}`)
    if (page.length === 0) return out
    out.push(...page)
    last = page[page.length - 1].seq
  }
}

describe('GET /v1/changes', () => {
  it('one JSON object per line, oldest first, in the SPEC shape', async () => {
    const lines = await read(app, '?limit=10000')
    expect(lines.length).toBeGreaterThan(30)
    const seqs = lines.map((l) => l.seq)
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b))
    expect(new Set(seqs).size).toBe(seqs.length)
    for (const l of lines) {
      expect(Object.keys(l).sort()).toEqual([
        'at',
        'changed',
        'cid',
        'collection',
        'flags',
        'op',
        'seq',
        'uri',
      ])
      // Only a prompt upsert says what its version changed (SPEC 14).
      if (l.op !== 'upsert' || l.collection !== NSIDS.prompt) expect(l.changed).toBeNull()
      expect(['upsert', 'delete']).toContain(l.op)
      expect(l.uri).toMatch(
        new RegExp(`^at://did:plc:[a-z]+/${l.collection.replaceAll('.', '\\.')}/`),
      )
      if (l.op === 'delete') {
        expect(l.cid).toBeNull()
        expect(l.flags).toBeNull()
      } else if (l.collection === NSIDS.prompt) {
        expect(Array.isArray(l.flags)).toBe(true)
      } else {
        expect(l.flags).toEqual([])
      }
    }
    const orphan = lines.find((l) => l.uri === promptUri(ALICE, s.alice.orphaned))
    expect(orphan).toMatchObject({ op: 'upsert', flags: ['orphaned'] })
    const recompiles = lines.filter((l) => l.uri === promptUri(ALICE, s.alice.recompiled))
    expect(new Set(recompiles.map((l) => l.cid)).size).toBe(3)
    // The seeded recompiles are not in Letta's format: the first version changed nothing.
    expect(recompiles[0]?.changed).toEqual([])
    expect(recompiles.slice(1).every((l) => (l.changed?.length ?? 0) > 0)).toBe(true)
  })

  it('prompt upserts carry the recompile anatomy, the same by REST and XRPC getChanges', async () => {
    const since = (await read(app, '?limit=10000')).at(-1)!.seq
    const did = `did:plc:${'g'.repeat(24)}`
    const rkey = s.w.tid()
    await lettaRecompiles(s.deps, s.w, did, rkey)
    const rest = (await read(app, `?since=${since}`)).filter((l) => l.uri === promptUri(did, rkey))
    expect(rest.map((l) => l.changed)).toEqual(LETTA_ANATOMY.map((a) => a.changed))
    const xrpc = await app.inject({
      url: `/xrpc/xyz.quasigod.lab.letta.appview.getChanges?since=${since}`,
    })
    expect(xrpc.statusCode, xrpc.body).toBe(200)
    const changes = (xrpc.json().changes as Line[]).filter((l) => l.uri === promptUri(did, rkey))
    expect(changes).toEqual(rest)
    // A delete carries none.
    await apply(s.deps, [s.w.prompt({ did, rkey, op: 'delete' })])
    const after = await read(app, `?since=${rest.at(-1)!.seq}`)
    expect(after.map((l) => [l.op, l.changed])).toEqual([['delete', null]])
  })

  it('a repo hidden now shows only its deletes', async () => {
    const carol = (await read(app, '?limit=10000')).filter((l) =>
      l.uri.startsWith(`at://${CAROL}/`),
    )
    expect(carol.length).toBeGreaterThan(0)
    expect(carol.every((l) => l.op === 'delete' && l.cid === null)).toBe(true)
  })

  it('resuming from the last seq read sees every later change exactly once, across chunks', async () => {
    const all = await read(app, '?limit=10000')
    expect(await drain(app, 0, 7)).toEqual(all)
    expect(await drain(chunky, 0, 10)).toEqual(all)
    expect(await read(chunky, '?limit=10000')).toEqual(all)
    const mid = all[9].seq
    expect(await read(chunky, `?since=${mid}&limit=5`)).toEqual(all.slice(10, 15))
    expect(await read(app, `?since=${all.at(-1)!.seq}`)).toEqual([])
  })

  it('defaults and limits', async () => {
    expect((await read(chunky, '')).length).toBe((await read(app, '?limit=10000')).length) // default 1000 covers them
    for (const q of ['?limit=0', '?limit=10001', '?since=-1', '?since=abc', '?limit=1.5']) {
      const res = await app.inject({ url: `/v1/changes${q}` })
      expect(res.statusCode, q).toBe(400)
      expect(res.json().error).toBe('InvalidRequest')
      expect(res.json().message).toMatch(/since|limit/)
    }
  })
})

describe('GET /v1/changes?include=record', () => {
  type RecordLine = Line & { record?: unknown; superseded?: boolean }
  const TABLE: Record<string, string> = {
    [NSIDS.prompt]: 'prompts',
    [NSIDS.conversation]: 'conversations',
    [NSIDS.agent]: 'agents',
  }

  it('upsert lines carry the record with their cid (older prompts from their history), else null and superseded', async () => {
    const plain = await read(app, '?limit=10000')
    const lines = (await read(app, '?limit=10000&include=record')) as RecordLine[]
    // The same lines, with the record beside them.
    expect(lines.map(({ record: _r, superseded: _s, ...l }) => l)).toEqual(plain)
    let current = 0
    let older = 0
    let superseded = 0
    for (const l of lines) {
      if (l.op === 'delete') {
        expect(l).not.toHaveProperty('record')
        continue
      }
      const [did, , rkey] = l.uri.slice('at://'.length).split('/')
      const [row] = await db.rows<{ cid: string; record: unknown }>(
        sql`SELECT cid, record FROM ${sql.identifier(TABLE[l.collection])}
          WHERE did = ${did} AND rkey = ${rkey} AND NOT deleted AND NOT hidden`,
      )
      if (row && row.cid === l.cid) {
        expect(l.record, l.uri).toEqual(row.record)
        expect(l).not.toHaveProperty('superseded')
        current++
      } else if (l.collection === NSIDS.prompt) {
        // An older version of a prompt: rebuilt from its revision, texts and all.
        const revs = await app.inject({ url: `/v1/prompts/${did}/${rkey}/revisions` })
        const rev = revs.json().items.find((r: { cid: string }) => r.cid === l.cid)
        const detail = await app.inject({ url: `/v1/prompts/${did}/${rkey}/revisions/${rev.rev}` })
        const record = l.record as Record<string, unknown>
        expect(record.content, l.uri).toBe(detail.json().content)
        expect(record.coreMemory, l.uri).toBe(detail.json().coreMemory)
        expect(record.compiledAt, l.uri).toBe(detail.json().compiledAt)
        expect(l).not.toHaveProperty('superseded')
        older++
      } else {
        expect(l.record, l.uri).toBeNull()
        expect(l.superseded, l.uri).toBe(true)
        superseded++
      }
    }
    // The fixture recompiles and rewrites records: current and older versions are there.
    expect(current).toBeGreaterThan(10)
    expect(older).toBeGreaterThan(0)
    expect(superseded).toBe(0)
    // The recompiled prompt's three versions, each as it was published (its `note` too).
    const versions = lines.filter((l) => l.uri === promptUri(ALICE, s.alice.recompiled))
    expect(versions.map((l) => (l.record as { note?: string }).note)).toEqual([
      undefined,
      'second',
      'third',
    ])
    // A prompt's record is the one its lookup answers.
    const uri = promptUri(ALICE, s.alice.recompiled)
    const newest = lines.filter((l) => l.uri === uri).at(-1)!
    const lookup = await app.inject({ url: `/v1/prompts/${ALICE}/${s.alice.recompiled}` })
    expect(newest.record).toEqual(lookup.json().record)
    // In chunks (3 lines a read), and resumed: the same lines.
    expect(await read(chunky, '?limit=10000&include=record')).toEqual(lines)
    expect(await read(chunky, `?since=${lines[4].seq}&limit=6&include=record`)).toEqual(
      lines.slice(5, 11),
    )
  })

  it('a version whose record was not kept whole (indexed before record_rest) is null and superseded', async () => {
    const uri = promptUri(ALICE, s.alice.recompiled)
    const [first] = (await read(app, '?limit=10000&include=record')).filter((l) => l.uri === uri)
    await db.rows(sql`UPDATE prompt_revisions SET record_rest = NULL WHERE cid = ${first.cid}`)
    try {
      const lines = (await read(app, '?limit=10000&include=record')) as RecordLine[]
      const again = lines.find((l) => l.seq === first.seq)!
      expect(again.record).toBeNull()
      expect(again.superseded).toBe(true)
    } finally {
      await db.rows(sql`UPDATE prompt_revisions r SET record_rest = p.record - 'content' - 'coreMemory'
        FROM prompts p WHERE r.cid = ${first.cid} AND p.did = r.did AND p.rkey = r.rkey`)
    }
  })

  it('a repo hidden now: its deletes only, with no record', async () => {
    const lines = (await read(app, '?limit=10000&include=record')) as RecordLine[]
    const carol = lines.filter((l) => l.uri.startsWith(`at://${CAROL}/`))
    expect(carol.length).toBeGreaterThan(0)
    for (const l of carol) expect(l).toEqual({ ...l, op: 'delete', cid: null })
    expect(carol.some((l) => 'record' in l)).toBe(false)
  })

  it('XRPC getChanges with records: a page stops at one chunk of them, and paging sees them all', async () => {
    const all = await read(app, '?limit=10000&include=record')
    const page = async (a: FastifyInstance, since: number) => {
      const url = `/xrpc/xyz.quasigod.lab.letta.appview.getChanges?since=${since}&include=record`
      const res = await a.inject({ url })
      expect(res.statusCode).toBe(200)
      return res.json() as { changes: Line[]; cursor: number }
    }
    // Without records a page reads chunk after chunk up to its limit; with them, one chunk.
    expect(
      (await chunky.inject({ url: '/xrpc/xyz.quasigod.lab.letta.appview.getChanges' })).json()
        .changes,
    ).toEqual(await read(app, '?limit=10000'))
    const first = await page(chunky, 0)
    expect(first.changes).toEqual(all.slice(0, 3))
    expect((await page(app, 0)).changes).toEqual(all)
    let since = 0
    const seen: Line[] = []
    for (;;) {
      const p = await page(chunky, since)
      expect(p.changes.length).toBeLessThanOrEqual(3)
      if (p.changes.length === 0) break
      seen.push(...p.changes)
      since = p.cursor
    }
    expect(seen).toEqual(all)
  })

  it('anything but include=record is a 400 that says so', async () => {
    for (const q of ['include=records', 'include=', 'include=record,flags', 'include=RECORD']) {
      const res = await app.inject({ url: `/v1/changes?${q}` })
      expect(res.statusCode, q).toBe(400)
      expect(res.json().error).toBe('InvalidRequest')
      expect(res.json().message).toMatch(/include must be record/)
    }
  })
})

describe('concurrent writers', () => {
  it('a polling reader sees each change exactly once while two writers commit', async () => {
    const w = new World()
    const deps = { ...s.deps }
    const writer = async (tag: string) => {
      for (let b = 0; b < 15; b++) {
        const events = []
        for (let i = 0; i < 4; i++) {
          const did = `did:plc:writer${tag}${i}aaaaaaaaaaaa`
          const rkey = w.tid()
          events.push(w.prompt({ did, rkey }))
          events.push(w.conversation({ did, rkey }))
        }
        await applyBatch(deps, events, null)
      }
    }
    const start = (await read(app, '?limit=10000')).at(-1)!.seq
    // Set once the writers are done: the last seq they committed, and when.
    let end: number | null = null
    let endedAt = 0
    const seen: Line[] = []
    const reader = (async () => {
      let last = start
      // Keep polling until the writers are done and the reader has come to their last
      // change: the feed may show a commit a poll later (on a loaded machine, several).
      const deadline = () => end !== null && Date.now() > endedAt + 30_000
      while (end === null || last < end) {
        if (deadline()) throw new Error(`the feed stopped at ${last}, the log ends at ${end}`)
        const page = await read(chunky, `?since=${last}&limit=9`)
        if (page.length === 0) {
          await new Promise((r) => setTimeout(r, 2))
          continue
        }
        for (const l of page) expect(l.seq).toBeGreaterThan(last)
        seen.push(...page)
        last = page[page.length - 1].seq
      }
    })()
    await Promise.all([writer('a'), writer('b')])
    const [{ max }] = await db.rows<{ max: number }>(sql`SELECT max(seq)::int AS max FROM changes`)
    endedAt = Date.now()
    end = max
    await reader
    const rows = await db.rows<{ seq: number }>(
      sql`SELECT seq FROM changes WHERE seq > ${start} ORDER BY seq`,
    )
    expect(seen.map((l) => l.seq)).toEqual(rows.map((r) => Number(r.seq)))
    // Four prompts and four conversations per batch, fifteen batches, two writers.
    expect(seen.length).toBe(2 * 15 * 8)
    // The writers' batches interleaved (they ran at once, the lock ordered them), so the
    // reader really did poll between commits of both.
    const writerOf = seen.map((l) => l.uri.split('/')[2].slice(0, 'did:plc:writera'.length))
    const switches = writerOf.filter((x, i) => i > 0 && x !== writerOf[i - 1]).length
    expect(switches).toBeGreaterThan(usingPostgres() ? 2 : 0)
  })
})
