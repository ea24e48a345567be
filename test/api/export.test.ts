import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DuckDBInstance } from '@duckdb/node-api'
import { tableFromIPC } from 'apache-arrow'
import type { FastifyInstance } from 'fastify'
import { readParquet } from 'parquet-wasm/node'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import type { Database } from '../../src/db/client.ts'
import type { ExportTable } from '../../src/db/read/export.ts'
import type { ExportFormat } from '../../src/export/files.ts'
import { exportSnapshot } from '../../src/export/snapshot.ts'
import { apply, NSIDS, sha256 } from '../helpers/events.ts'
import { LETTA_ANATOMY, lettaRecompiles } from '../helpers/letta-recompiles.ts'
import { ALICE, BOB, type Seeded, useSeededApp } from './fixtures.ts'

// The snapshot export read back by two Parquet readers of their own (DuckDB, and Apache
// Arrow's Rust reader through parquet-wasm), compared with what the read API answers; then
// a job that loads a snapshot and follows /v1/changes?since=<seq> ends equal to the index.

let db: Database
let app: FastifyInstance
let s: Seeded
const get = useSeededApp({}, (x) => {
  ;({ db, app, s } = x)
})

const dirs: string[] = []
async function exportTo(format: ExportFormat, tables: ExportTable[]) {
  const dir = await mkdtemp(join(tmpdir(), 'export-test-'))
  dirs.push(dir)
  const manifest = await exportSnapshot(db, NSIDS, { dir, format, tables })
  return { dir, manifest }
}

let duck: Awaited<ReturnType<typeof DuckDBInstance.create>>
beforeAll(async () => {
  duck = await DuckDBInstance.create(':memory:')
})
afterAll(async () => {
  duck?.closeSync()
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })))
})

type Row = Record<string, unknown>

async function duckRows(path: string): Promise<Row[]> {
  const conn = await duck.connect()
  try {
    const reader = await conn.runAndReadAll(`SELECT * FROM read_parquet('${path}')`)
    return reader.getRowObjectsJS() as Row[]
  } finally {
    conn.closeSync()
  }
}

/** Apache Arrow's reader (arrow-rs `parquet`, as wasm), into an Arrow JS table. */
async function arrowRows(path: string): Promise<Row[]> {
  const table = tableFromIPC(readParquet(await readFile(path)).intoIPCStream())
  return table.toArray().map((r) => r.toJSON() as Row)
}

const ndjsonRows = async (path: string): Promise<Row[]> =>
  (await readFile(path, 'utf8'))
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Row)

const listOf = (v: unknown): string[] => [...((v as Iterable<string>) ?? [])].map(String)

/** What a prompt row must agree on with its lookup. */
async function checkAgainstLookup(row: Row) {
  const [, , did, , rkey] = String(row.uri).split('/')
  const a = await get(`/v1/prompts/${did}/${rkey}`)
  expect(a.status, String(row.uri)).toBe(200)
  expect(row.cid).toBe(a.body.cid)
  expect(sha256(String(row.content))).toBe(sha256(a.body.record.content))
  expect(row.coreMemory).toBe(a.body.record.coreMemory ?? null)
  expect(listOf(row.flags)).toEqual(a.body.flags)
  expect(row.conversationExists).toBe(a.body.conversation.exists)
  expect(row.agentExists).toBe(a.body.agent.exists)
  expect(Number(row.recompiles)).toBe(a.body.recompiles)
}

describe('prompt-appview export (SPEC 13)', () => {
  it('Parquet read by DuckDB and by Apache Arrow equals the read API, counts equal /v1/stats', async () => {
    const { dir, manifest } = await exportTo('parquet', ['prompts', 'conversations', 'agents'])
    const stats = (await get('/v1/stats')).body
    expect(manifest.counts).toEqual({
      prompts: stats.prompts,
      conversations: stats.conversations,
      agents: stats.agents,
    })
    expect((await readdir(dir)).sort()).toEqual([
      'agents.parquet',
      'conversations.parquet',
      'manifest.json',
      'prompts.parquet',
    ])
    expect(JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8'))).toEqual(manifest)
    const duckPrompts = await duckRows(join(dir, 'prompts.parquet'))
    const arrowPrompts = await arrowRows(join(dir, 'prompts.parquet'))
    expect(duckPrompts.length).toBe(stats.prompts)
    expect(arrowPrompts.length).toBe(stats.prompts)
    for (const row of duckPrompts) await checkAgainstLookup(row)
    // Both readers see the same values, lists included; carol (taken down) is in neither.
    const byUri = new Map(arrowPrompts.map((r) => [r.uri, r]))
    for (const row of duckPrompts) {
      const other = byUri.get(row.uri)!
      expect(other.content).toBe(row.content)
      expect(listOf(other.flags)).toEqual(listOf(row.flags))
      expect(Number(other.indexedAt)).toBe((row.indexedAt as Date).getTime())
      expect(String(row.did)).not.toBe('did:plc:carolcccccccccccccccccccc')
    }
    for (const table of ['conversations', 'agents'] as const) {
      const rows = await duckRows(join(dir, `${table}.parquet`))
      expect(rows.length).toBe(stats[table])
      expect((await arrowRows(join(dir, `${table}.parquet`))).length).toBe(stats[table])
      for (const r of rows)
        expect(JSON.parse(String(r.record)).$type).toBe(
          NSIDS[table === 'agents' ? 'agent' : 'conversation'],
        )
    }
  })

  it('NDJSON carries the same rows as Parquet', async () => {
    const pq = await exportTo('parquet', ['prompts'])
    const nd = await exportTo('ndjson', ['prompts'])
    expect(nd.manifest.seq).toBe(pq.manifest.seq)
    const lines = await ndjsonRows(join(nd.dir, 'prompts.ndjson'))
    const parquet = await duckRows(join(pq.dir, 'prompts.parquet'))
    expect(lines.length).toBe(parquet.length)
    const byUri = new Map(parquet.map((r) => [r.uri, r]))
    for (const line of lines) {
      const row = byUri.get(line.uri)!
      expect(line.content).toBe(row.content)
      expect(line.flags).toEqual(listOf(row.flags))
      expect(line.indexedAt).toBe((row.indexedAt as Date).toISOString())
      await checkAgainstLookup(line)
    }
  })

  it('--revisions: every revision of the visible prompts, with the texts the API rebuilds', async () => {
    const { dir, manifest } = await exportTo('parquet', ['revisions'])
    const rows = await duckRows(join(dir, 'revisions.parquet'))
    expect(rows.length).toBe(manifest.counts.revisions)
    const recompiled = `at://${ALICE}/${NSIDS.prompt}/${s.alice.recompiled}`
    const mine = rows.filter((r) => r.prompt === recompiled)
    expect(mine.length).toBe(3)
    for (const r of mine) {
      const a = await get(`/v1/prompts/${ALICE}/${s.alice.recompiled}/revisions/${r.rev}`)
      expect(a.status).toBe(200)
      expect(r.content).toBe(a.body.content)
      expect(r.coreMemory).toBe(a.body.coreMemory)
      expect(r.cid).toBe(a.body.cid)
    }
    expect(rows.some((r) => String(r.prompt).includes('carol'))).toBe(false)
  })

  it('GET /v1/export/{table}.{format}: the file whole, with its length and x-snapshot-seq', async () => {
    const res = await app.inject({ url: '/v1/export/prompts.parquet' })
    expect(res.statusCode, res.body).toBe(200)
    expect(res.headers['content-type']).toBe('application/vnd.apache.parquet')
    expect(Number(res.headers['content-length'])).toBe(res.rawPayload.length)
    const { manifest } = await exportTo('parquet', ['prompts'])
    expect(Number(res.headers['x-snapshot-seq'])).toBe(manifest.seq)
    const dir = await mkdtemp(join(tmpdir(), 'export-http-'))
    dirs.push(dir)
    await writeFile(join(dir, 'p.parquet'), res.rawPayload)
    expect((await duckRows(join(dir, 'p.parquet'))).length).toBe(manifest.counts.prompts)
    const nd = await app.inject({ url: '/v1/export/agents.ndjson' })
    expect(nd.statusCode).toBe(200)
    expect(nd.body.trim().split('\n').length).toBe((await get('/v1/stats')).body.agents)
    // Nothing of the spooled files is left behind (removed as the answer goes out).
    await vi.waitFor(async () =>
      expect(
        (await readdir(tmpdir())).filter((f) => f.startsWith('prompt-appview-export-')),
      ).toEqual([]),
    )
  })

  it('bad names are a 400 in the error shape', async () => {
    for (const file of ['prompts.csv', 'accounts.parquet', '..%2Fetc.parquet', 'prompts', '%00']) {
      const a = await get(`/v1/export/${file}`)
      expect(a.status, file).toBe(400)
      expect(a.body.error).toBe('InvalidRequest')
    }
  })

  it('a job that loads the snapshot and follows /v1/changes?since=<seq> ends equal to the index', async () => {
    const { dir, manifest } = await exportTo('ndjson', ['prompts'])
    const state = new Map<string, { cid: unknown; flags: unknown }>()
    for (const r of await ndjsonRows(join(dir, 'prompts.ndjson')))
      state.set(String(r.uri), { cid: r.cid, flags: r.flags })
    // Ingestion goes on after the snapshot: a new prompt, a recompile, a delete.
    const w = s.w
    const fresh = w.tid()
    await apply(s.deps, [
      w.conversation({ did: BOB, rkey: fresh }),
      w.prompt({ did: BOB, rkey: fresh }),
      w.prompt({ did: ALICE, rkey: s.alice.ok, op: 'update', fields: { memfsRevision: 'rev-z' } }),
      w.prompt({ did: BOB, rkey: s.bobRkeys[1], op: 'delete' }),
    ])
    const feed = await app.inject({ url: `/v1/changes?since=${manifest.seq}&limit=10000` })
    const lines = feed.body
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l))
    expect(lines.length).toBeGreaterThan(0)
    for (const line of lines) {
      expect(line.seq).toBeGreaterThan(manifest.seq)
      if (line.collection !== NSIDS.prompt) continue
      if (line.op === 'delete') state.delete(line.uri)
      else state.set(line.uri, { cid: line.cid, flags: line.flags })
    }
    const now = await exportTo('ndjson', ['prompts'])
    const expected = new Map(
      (await ndjsonRows(join(now.dir, 'prompts.ndjson'))).map((r) => [
        String(r.uri),
        { cid: r.cid, flags: r.flags },
      ]),
    )
    expect(new Map([...state].sort())).toEqual(new Map([...expected].sort()))
  })

  it('a manifest only beside whole files: an export that fails half-way leaves none', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'export-fail-'))
    dirs.push(dir)
    await writeFile(join(dir, 'manifest.json'), '{"from": "an earlier export"}')
    const failing = exportSnapshot(db, NSIDS, {
      dir,
      format: 'parquet',
      tables: ['prompts', 'conversations'],
      onProgress: (table) => {
        if (table === 'conversations') throw new Error('disk full')
      },
    })
    await expect(failing).rejects.toThrow('disk full')
    // prompts.parquet was whole; conversations' part is gone; no manifest vouches for either.
    expect(await readdir(dir)).toEqual(['prompts.parquet'])
  })

  it('schema version 2: typed compiledAt beside its raw text, agent a string or null, names and both join facts, prompt_flags; invalid records included', async () => {
    const did = `did:plc:${'e'.repeat(24)}`
    const w = s.w
    const [good, badAgent, badTime, named, other] = [w.tid(), w.tid(), w.tid(), w.tid(), w.tid()]
    const agentUri = w.agentUri(did, 'agentrkey')
    await apply(s.deps, [
      w.commit({
        did,
        collection: NSIDS.agent,
        rkey: 'agentrkey',
        record: { $type: NSIDS.agent, name: 'helper' },
      }),
      w.conversation({ did, rkey: good }),
      w.conversation({ did, rkey: other }),
      w.prompt({ did, rkey: good, fields: { compiledAt: '2026-01-02T03:04:05.678+02:00' } }),
      w.prompt({ did, rkey: badAgent, fields: { agent: { not: 'a string' } } }),
      w.prompt({ did, rkey: badTime, fields: { compiledAt: '2026-01-02T03:04:05' } }),
      // Mismatched: its own slot has no conversation, the one it names exists.
      w.prompt({ did, rkey: named, fields: { conversation: w.convUri(did, other) } }),
    ])
    const { dir, manifest } = await exportTo('parquet', ['prompts', 'prompt_flags'])
    expect(manifest.schemaVersion).toBe(2)
    const conn = await duck.connect()
    const query = async (q: string) =>
      (await conn.runAndReadAll(q)).getRowObjectsJS() as Array<Record<string, unknown>>
    try {
      const types = await query(
        `DESCRIBE SELECT * FROM read_parquet('${join(dir, 'prompts.parquet')}')`,
      )
      const typeOf = (c: string) => types.find((t) => t.column_name === c)?.column_type
      expect(typeOf('compiledAt')).toBe('TIMESTAMP WITH TIME ZONE')
      for (const c of [
        'compiledAtRaw',
        'agent',
        'agentName',
        'handle',
        'validationError',
        'provenance',
      ])
        expect(typeOf(c), c).toBe('VARCHAR')
      expect(typeOf('namedConversationExists')).toBe('BOOLEAN')
      const rows = await query(
        `SELECT rkey, epoch_ms(compiledAt)::DOUBLE AS ms, compiledAtRaw, agent, agentName, validationError,
           provenance, conversationExists, namedConversationExists, flags
         FROM read_parquet('${join(dir, 'prompts.parquet')}') WHERE did = '${did}'`,
      )
      const by = new Map(rows.map((r) => [r.rkey, r]))
      expect(by.get(good)).toMatchObject({
        ms: Date.parse('2026-01-02T01:04:05.678Z'),
        compiledAtRaw: '2026-01-02T03:04:05.678+02:00',
        agent: agentUri,
        agentName: 'helper',
        validationError: null,
        provenance: (await get(`/v1/prompts/${did}/${good}`)).body.provenance?.source ?? null,
        conversationExists: true,
        namedConversationExists: true,
      })
      expect(by.get(badAgent)).toMatchObject({ agent: null, agentName: null })
      expect(String(by.get(badAgent)?.validationError)).not.toBe('null')
      expect(by.get(badTime)).toMatchObject({ ms: null, compiledAtRaw: '2026-01-02T03:04:05' })
      expect(listOf(by.get(badTime)?.flags)).toContain('invalid')
      expect(by.get(named)).toMatchObject({
        conversationExists: false,
        namedConversationExists: true,
      })
      // prompt_flags: one row per prompt and flag, ok for none, the same as the list.
      const flagRows = await query(
        `SELECT f.uri, list_sort(list(f.flag)) AS flags, any_value(p.flags) AS listed
         FROM read_parquet('${join(dir, 'prompt_flags.parquet')}') f
         JOIN read_parquet('${join(dir, 'prompts.parquet')}') p USING (uri) GROUP BY f.uri`,
      )
      expect(flagRows.length).toBe(manifest.counts.prompts)
      for (const r of flagRows) {
        const listed = listOf(r.listed).sort()
        expect(listOf(r.flags), String(r.uri)).toEqual(listed.length > 0 ? listed : ['ok'])
      }
    } finally {
      conn.closeSync()
    }
  })

  it('the recompile anatomy: changed on prompts, changed and memoryFiles on revisions, lists in DuckDB', async () => {
    const did = `did:plc:${'f'.repeat(24)}`
    const rkey = s.w.tid()
    await lettaRecompiles(s.deps, s.w, did, rkey)
    const { dir } = await exportTo('parquet', ['prompts', 'revisions'])
    const nd = await exportTo('ndjson', ['prompts', 'revisions'])
    const conn = await duck.connect()
    const query = async (q: string) =>
      (await conn.runAndReadAll(q)).getRowObjectsJS() as Array<Record<string, unknown>>
    try {
      const file = (t: string) => `read_parquet('${join(dir, `${t}.parquet`)}')`
      const types = await query(`DESCRIBE SELECT changed FROM ${file('prompts')}`)
      expect(types[0]?.column_type).toBe('VARCHAR[]')
      const [p] = await query(`SELECT changed FROM ${file('prompts')} WHERE did = '${did}'`)
      expect(listOf(p?.changed)).toEqual(['template'])
      const revs = await query(
        `SELECT changed, memoryFiles FROM ${file('revisions')}
         WHERE prompt = 'at://${did}/${NSIDS.prompt}/${rkey}' ORDER BY rev`,
      )
      expect(
        revs.map((r) => ({ changed: listOf(r.changed), memoryFiles: listOf(r.memoryFiles) })),
      ).toEqual(LETTA_ANATOMY)
      // Kinds are counted with unnest: the seeded recompiles (not Letta's format) are other.
      const kinds = await query(
        `SELECT k, count(*)::INT AS n FROM (SELECT unnest(changed) AS k FROM ${file('revisions')})
         GROUP BY k ORDER BY k`,
      )
      expect(kinds.map((k) => k.k)).toEqual(
        expect.arrayContaining(['memory', 'metadata', 'template']),
      )
    } finally {
      conn.closeSync()
    }
    const lines = await ndjsonRows(join(nd.dir, 'revisions.ndjson'))
    const mine = lines.filter((l) => l.prompt === `at://${did}/${NSIDS.prompt}/${rkey}`)
    expect(mine.map((l) => ({ changed: l.changed, memoryFiles: l.memoryFiles }))).toEqual(
      LETTA_ANATOMY,
    )
    const [prompt] = (await ndjsonRows(join(nd.dir, 'prompts.ndjson'))).filter((l) => l.did === did)
    expect(prompt?.changed).toEqual(['template'])
  })
})
