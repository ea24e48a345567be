import { sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Database } from '../../src/db/client.ts'
import type { IndexerDeps } from '../../src/indexer/apply.ts'
import type { BatchEvent } from '../../src/indexer/plan.ts'
import { createTestDatabase, usingPostgres } from '../helpers/db.ts'
import { apply, indexerDeps, NSIDS, World } from '../helpers/events.ts'
import { LETTA_ANATOMY, lettaRecompiles } from '../helpers/letta-recompiles.ts'
import { isErrorShape, makeApp } from './fixtures.ts'

// Revision content: every revision's content and coreMemory come back exactly, stored as
// deltas that cost a fraction of the copies; the revision and diff endpoints of SPEC
// section 6, their 404s, and a database whose older revisions never had their texts kept.

const { prompt: P, conversation: C } = NSIDS
const DID = 'did:plc:revisionsaaaaaaaaaaaaaaa'
const OTHER = 'did:plc:revisionsbbbbbbbbbbbbbbb'

// A seeded word stream, so the text is realistic prose with few repeats.
function words(seed: number, n: number): string {
  const vocab =
    'memory agent user persona human tool call reply plan goal note music travel garden code review project deadline coffee letter weather friend team budget token limit search insert replace archive recall summary context window'.split(
      ' ',
    )
  let x = seed
  const out: string[] = []
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) % 2147483648
    out.push(`${vocab[x % vocab.length]}${x % 7 === 0 ? ` ${x % 1000}` : ''}`)
  }
  return out.join(' ')
}
const lines = (seed: number, count: number, perLine: number) =>
  Array.from({ length: count }, (_, i) => words(seed * 1000 + i, perLine)).join('\n')

const TEMPLATE_HEAD = `You are Ada, a helpful companion.\n<base_instructions>\n${lines(1, 150, 14)}\n</base_instructions>\n`
const TEMPLATE_TAIL = `\n<tool_rules>\n${lines(2, 20, 10)}\n</tool_rules>`

interface Version {
  content: string
  coreMemory: string
}

/** Revision i: the memory block has one line replaced and one appended per step. */
function version(i: number): Version {
  const memLines = lines(3, 60, 12).split('\n')
  for (let k = 1; k <= i; k++) {
    memLines[(k * 7) % memLines.length] = `edited ${k}: ${words(k, 8)}`
    if (k % 3 === 0) memLines.push(`appended ${k}: ${words(k + 500, 6)}`)
  }
  const coreMemory = `<memory_blocks>\n${memLines.join('\n')}\n</memory_blocks>`
  const footer = `\n<memory_metadata>\n- The current system date is: 2026-11-30T12:${String(i % 60).padStart(2, '0')}:00.000Z\n- Recompile ${i}\n</memory_metadata>`
  return { content: TEMPLATE_HEAD + coreMemory + TEMPLATE_TAIL + footer, coreMemory }
}

let db: Database
let app: FastifyInstance
let deps: IndexerDeps
const w = new World()
const rkey = w.tid()
const revs: string[] = []
const versions: Version[] = []

const get = async (url: string) => {
  const res = await app.inject({ method: 'GET', url })
  return { status: res.statusCode, body: JSON.parse(res.body) }
}
const base = `/v1/prompts/${DID}/${rkey}`

beforeAll(async () => {
  db = await createTestDatabase()
  deps = indexerDeps(db)
  await apply(deps, [w.conversation({ did: DID, rkey, record: { $type: C, title: 'chat' } })])
  const pending: BatchEvent[] = []
  for (let i = 0; i <= 100; i++) {
    const v = version(i)
    versions.push(v)
    const ev = w.commit({
      did: DID,
      collection: P,
      rkey,
      op: i === 0 ? 'create' : 'update',
      record: {
        ...w.promptRecord(DID, rkey),
        ...v,
      },
    })
    revs.push(ev.rev)
    pending.push(ev)
    // Half one revision per batch, half ten: chains across and within batches.
    if (i < 50 || pending.length === 10 || i === 100) await apply(deps, pending.splice(0))
  }
  app = await makeApp(db, {})
}, 120_000)
afterAll(async () => {
  await app?.close()
  await db?.close()
})

describe('revision content storage', () => {
  it('keeps 101 revisions of a 20 KB prompt in well under 10 copies', async () => {
    const size = Buffer.byteLength(versions[100].content, 'utf8')
    expect(size).toBeGreaterThan(19_000)
    const [r] = await db.rows<{ texts: number; rows: number; table: number }>(
      sql`SELECT sum(pg_column_size(body))::int AS texts, count(*)::int AS rows,
        pg_total_relation_size('revision_texts')::int AS table FROM revision_texts WHERE did = ${DID}`,
    )
    const copies = r.texts / size
    console.log(
      `[revision storage ${usingPostgres() ? 'postgres' : 'pglite'}] 101 revisions of ${size} B: ` +
        `bodies ${r.texts} B (${copies.toFixed(2)} copies) in ${r.rows} rows; ` +
        `table with TOAST and index ${r.table} B; raw ${101 * size} B`,
    )
    expect(copies).toBeLessThan(5)
    // coreMemory is part of content every time here: it is an offset, never a text.
    expect(r.rows).toBe(101)
  })

  it('gives back every revision exactly', async () => {
    for (const i of [0, 1, 15, 16, 17, 33, 49, 50, 55, 99, 100]) {
      const r = await get(`${base}/revisions/${revs[i]}`)
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({
        uri: `at://${DID}/${P}/${rkey}`,
        rev: revs[i],
        contentKept: true,
        note: null,
      })
      expect(r.body.content).toBe(versions[i].content)
      expect(r.body.coreMemory).toBe(versions[i].coreMemory)
    }
  })

  it('keeps the chain to a whole text short', async () => {
    const [r] = await db.rows<{ depth: number }>(
      sql`SELECT max(depth)::int AS depth FROM revision_texts WHERE did = ${DID}`,
    )
    expect(r.depth).toBeLessThanOrEqual(48)
    expect(r.depth).toBeGreaterThan(1)
  })
})

describe('GET .../diff', () => {
  it('defaults to the previous revision against the newest, collapsing unchanged runs', async () => {
    const r = await get(`${base}/diff`)
    expect(r.status).toBe(200)
    expect(r.body.from).toBe(revs[99])
    expect(r.body.to).toBe(revs[100])
    const ops = r.body.content.map((h: { op: string }) => h.op)
    expect(ops).toContain('insert')
    expect(ops).toContain('delete')
    const inserted = r.body.content
      .filter((h: { op: string }) => h.op === 'insert')
      .flatMap((h: { lines: string[] }) => h.lines)
    expect(inserted.some((l: string) => l.startsWith('edited 100:'))).toBe(true)
    expect(inserted.some((l: string) => l.includes('Recompile 100'))).toBe(true)
    const gaps = r.body.content.filter((h: { skipped?: number }) => h.skipped)
    expect(gaps.length).toBeGreaterThan(0)
    for (const g of gaps) expect(g).toMatchObject({ op: 'equal', lines: [] })
    // Every line of the newer content is accounted for: shown, or counted in a gap.
    const newLines = r.body.content
      .filter((h: { op: string }) => h.op !== 'delete')
      .reduce(
        (n: number, h: { lines: string[]; skipped?: number }) =>
          n + h.lines.length + (h.skipped ?? 0),
        0,
      )
    expect(newLines).toBe(versions[100].content.split('\n').length)
    expect(r.body.coreMemory.some((h: { op: string }) => h.op === 'insert')).toBe(true)
  })

  it('diffs any two revisions, and the first against nothing', async () => {
    const r = await get(`${base}/diff?from=${revs[3]}&to=${revs[60]}`)
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ from: revs[3], to: revs[60] })
    const first = await get(`${base}/diff?to=${revs[0]}`)
    expect(first.status).toBe(200)
    expect(first.body.from).toBeNull()
    expect(first.body.content.every((h: { op: string }) => h.op === 'insert')).toBe(true)
    const back = await get(`${base}/diff?from=${revs[10]}`)
    expect(back.body).toMatchObject({ from: revs[10], to: revs[100] })
  })

  it('is a 404 for a rev that does not exist or belongs to another prompt', async () => {
    const otherRkey = w.tid()
    const ev = w.prompt({ did: OTHER, rkey: otherRkey })
    await apply(deps, [ev])
    for (const url of [
      `${base}/diff?from=${ev.rev}&to=${revs[100]}`,
      `${base}/diff?to=${w.tid()}`,
      `${base}/revisions/${ev.rev}`,
      `${base}/revisions/${w.tid()}`,
      `/v1/prompts/${OTHER}/${rkey}/diff`,
      `/v1/prompts/${DID}/${w.tid()}/revisions/${revs[1]}`,
    ]) {
      const r = await get(url)
      expect(r.status, url).toBe(404)
      expect(isErrorShape(r.body)).toBe(true)
    }
    for (const url of [`${base}/diff?from=not%20a%20rev`, `${base}/revisions/a%2Fb`]) {
      const r = await get(url)
      expect(r.status, url).toBe(400)
      expect(isErrorShape(r.body)).toBe(true)
    }
  })

  it('stays bounded on a 200,000-byte prompt rewritten throughout', async () => {
    const big = w.tid()
    const a = lines(7, 2500, 12).slice(0, 200_000)
    const b = lines(8, 2500, 12).slice(0, 200_000)
    const e1 = w.commit({
      did: DID,
      collection: P,
      rkey: big,
      record: {
        ...w.promptRecord(DID, big),
        content: a,
        coreMemory: 'x',
      },
    })
    const e2 = w.commit({
      did: DID,
      collection: P,
      rkey: big,
      op: 'update',
      record: {
        ...w.promptRecord(DID, big),
        content: b,
        coreMemory: 'y',
      },
    })
    await apply(deps, [e1])
    await apply(deps, [e2])
    const r = await get(`/v1/prompts/${DID}/${big}/diff`)
    expect(r.status).toBe(200)
    const shown = r.body.content.reduce(
      (n: number, h: { lines: string[] }) => n + h.lines.length,
      0,
    )
    expect(shown).toBeLessThanOrEqual(a.split('\n').length + b.split('\n').length)
    const detail = await get(`/v1/prompts/${DID}/${big}/revisions/${e2.rev}`)
    expect(detail.body.content).toBe(b)
    // coreMemory is not part of content: kept as a text of its own.
    expect(detail.body.coreMemory).toBe('y')
  }, 60_000)
})

describe('the recompile anatomy (REST and XRPC)', () => {
  const did = 'did:plc:revisionslettaaaaaaaaaaa'
  const lettaKey = w.tid()
  const xrpc = (method: string, q: string) =>
    get(`/xrpc/xyz.quasigod.lab.letta.appview.${method}?did=${did}&rkey=${lettaKey}${q}`)
  const anatomyOf = (r: { changed: unknown; memoryFiles: unknown }) => ({
    changed: r.changed,
    memoryFiles: r.memoryFiles,
  })
  let oldestFirst: string[] = []
  beforeAll(async () => {
    await lettaRecompiles(deps, w, did, lettaKey)
    const page = await get(`/v1/prompts/${did}/${lettaKey}/revisions`)
    oldestFirst = page.body.items.map((r: { rev: string }) => r.rev).reverse()
  })

  it('each revision of the list and each one revision says what it changed', async () => {
    const rest = await get(`/v1/prompts/${did}/${lettaKey}/revisions`)
    const x = await xrpc('getPromptRevisions', '')
    expect(x.status).toBe(200)
    expect(x.body).toEqual(rest.body)
    expect(rest.body.items.map(anatomyOf).reverse()).toEqual(LETTA_ANATOMY)
    for (const [i, rev] of oldestFirst.entries()) {
      const one = await get(`/v1/prompts/${did}/${lettaKey}/revisions/${rev}`)
      expect(anatomyOf(one.body)).toEqual(LETTA_ANATOMY[i])
      expect((await xrpc('getPromptRevision', `&rev=${rev}`)).body).toEqual(one.body)
    }
  })

  it("the prompt itself, in a list and by XRPC, carries its current version's changed", async () => {
    const one = await get(`/v1/prompts/${did}/${lettaKey}`)
    expect(one.body.changed).toEqual(['template'])
    const list = await get(`/v1/prompts?did=${did}`)
    const item = list.body.items.find((p: { rkey: string }) => p.rkey === lettaKey)
    expect(item.changed).toEqual(['template'])
    expect((await xrpc('getPrompt', '')).body.changed).toEqual(['template'])
  })

  it('the diff says what changed and shows each of the three parts once', async () => {
    const memory = await get(`/v1/prompts/${did}/${lettaKey}/diff?to=${oldestFirst[2]}`)
    expect(memory.status).toBe(200)
    expect(anatomyOf(memory.body)).toEqual(LETTA_ANATOMY[2])
    expect((await xrpc('getPromptDiff', `&to=${oldestFirst[2]}`)).body).toEqual(memory.body)
    const changedLines = (hunks: Array<{ op: string; lines: string[] }>) =>
      hunks.filter((h) => h.op !== 'equal').flatMap((h) => h.lines)
    const { template, memory: mem, metadata } = memory.body.parts
    expect(changedLines(template)).toEqual([])
    expect(changedLines(mem).some((l: string) => l.includes('Sam likes tea'))).toBe(true)
    // Letta rewrites the metadata block at every recompile; the memory edit is not in it.
    expect(changedLines(metadata).join('\n')).not.toContain('Sam')
    // The same change, whole content against whole core memory, shows twice: not the parts.
    expect(changedLines(memory.body.content).some((l: string) => l.includes('Sam likes'))).toBe(
      true,
    )
    const template3 = (await get(`/v1/prompts/${did}/${lettaKey}/diff`)).body
    expect(anatomyOf(template3)).toEqual(LETTA_ANATOMY[3])
    expect(changedLines(template3.parts.template)).toEqual(['Never lie.'])
    expect(changedLines(template3.parts.memory)).toEqual([])
    // Any two revisions: oldest against newest is a template and memory change.
    const span = await get(
      `/v1/prompts/${did}/${lettaKey}/diff?from=${oldestFirst[0]}&to=${oldestFirst[3]}`,
    )
    expect(anatomyOf(span.body)).toEqual({
      changed: ['template', 'memory'],
      memoryFiles: ['human.md'],
    })
    const first = await get(`/v1/prompts/${did}/${lettaKey}/diff?to=${oldestFirst[0]}`)
    expect(anatomyOf(first.body)).toEqual({ changed: [], memoryFiles: [] })
    expect(first.body.parts.memory.every((h: { op: string }) => h.op === 'insert')).toBe(true)
  })

  it('content not in Letta format: other, the plain diff, no parts', async () => {
    const plain = (await get(`${base}/diff`)).body
    expect(plain.parts).toBeNull()
    expect(plain.changed.length).toBeGreaterThan(0)
    expect(plain.content).not.toBeNull()
  })
})

describe('a database from before revision content', () => {
  it('says so for old revisions, and still shows the current one from its record', async () => {
    const old = w.tid()
    const e1 = w.prompt({ did: DID, rkey: old, fields: { content: 'one\n' } })
    const e2 = w.prompt({ did: DID, rkey: old, op: 'update', fields: { content: 'two\n' } })
    await apply(deps, [e1, e2])
    // What migration 0004 leaves for revisions indexed before it: no texts.
    await db.rows(sql`UPDATE prompt_revisions SET text_kept = false, core_memory_hash = NULL,
      core_memory_at = NULL, core_memory_length = NULL WHERE did = ${DID} AND rkey = ${old}`)
    await db.rows(sql`DELETE FROM revision_texts WHERE did = ${DID}
      AND hash IN (SELECT content_hash FROM prompt_revisions WHERE did = ${DID} AND rkey = ${old})`)
    const r1 = await get(`/v1/prompts/${DID}/${old}/revisions/${e1.rev}`)
    expect(r1.status).toBe(200)
    expect(r1.body).toMatchObject({ contentKept: false, content: null, coreMemory: null })
    expect(r1.body.note).toMatch(/before revision content was kept/)
    const r2 = await get(`/v1/prompts/${DID}/${old}/revisions/${e2.rev}`)
    expect(r2.body).toMatchObject({ contentKept: true, content: 'two\n' })
    const d = await get(`/v1/prompts/${DID}/${old}/diff`)
    expect(d.status).toBe(200)
    expect(d.body).toMatchObject({ content: null, coreMemory: null })
    expect(d.body.note).toMatch(/before revision content was kept/)
    // The next recompile has no stored base: it is kept whole, and reads back.
    const e3 = w.prompt({ did: DID, rkey: old, op: 'update', fields: { content: 'three\n' } })
    await apply(deps, [e3])
    const r3 = await get(`/v1/prompts/${DID}/${old}/revisions/${e3.rev}`)
    expect(r3.body).toMatchObject({ contentKept: true, content: 'three\n', note: null })
    // e2 is no longer the current record, and its text was never kept.
    const r2later = await get(`/v1/prompts/${DID}/${old}/revisions/${e2.rev}`)
    expect(r2later.body).toMatchObject({ contentKept: false, content: null })
  })

  it('hides the revisions of a hidden repo and drops the texts of a purged one', async () => {
    await apply(deps, [w.account({ did: OTHER, active: false, status: 'takendown', seq: 1 })])
    const [o] = await db.rows<{ rkey: string; rev: string }>(
      sql`SELECT rkey, rev FROM prompt_revisions WHERE did = ${OTHER} LIMIT 1`,
    )
    expect((await get(`/v1/prompts/${OTHER}/${o.rkey}/revisions/${o.rev}`)).status).toBe(404)
    expect((await get(`/v1/prompts/${OTHER}/${o.rkey}/diff`)).status).toBe(404)
    await apply(deps, [w.account({ did: OTHER, active: false, status: 'deleted', seq: 2 })])
    const left = await db.rows(sql`SELECT 1 FROM revision_texts WHERE did = ${OTHER}`)
    expect(left).toEqual([])
  })
})
