import { sql } from 'drizzle-orm'
import type { Runtime } from '../../src/cli/runtime.ts'
import { applyBatch } from '../../src/indexer/apply.ts'
import { normalizeJetstreamEvent } from '../../src/ingest/jetstream/event.ts'
import type { IndexEvent } from '../../src/model/events.ts'
import { rawClient } from './pg.ts'
import { benchGenerator, COLLECTIONS } from './traffic.ts'

// A read-benchmark database of `target` prompts, built in two steps: generated traffic
// indexed by the product (so flags, groups and change rows are the indexer's own), then
// whole repos copied under new DIDs in SQL until the target is reached. Every at-uri and
// record names the copy's DID, so each copy is a coherent repo with the same flags as its
// original; indexing hundreds of thousands of prompts event by event would take most of
// the benchmark's time budget.

export interface LoadResult {
  seedEvents: number
  seedPrompts: number
  copies: number
  prompts: number
  seedS: number
  copyS: number
  vacuumS: number
}

// The columns every record table has (schema.ts, recordColumns), less did and record.
const RECORD_COLUMNS = [
  'rkey',
  'rev',
  'cid',
  'deleted',
  'hidden',
  'indexed_at',
  'emitted_cid',
  'emitted_visible',
]

const COPY_COLUMNS: Record<
  string,
  { cols: string[]; did: string[]; text: string[]; json?: string[] }
> = {
  prompts: {
    cols: [
      ...RECORD_COLUMNS,
      'flags',
      'base_flags',
      'emitted_flags',
      'validation_error',
      'content_bytes',
      'agent_rkey',
      'raw_system_hash',
      'memfs_revision',
      'compiled_us',
      'evidence',
      'recompiles',
      'search_vector',
    ],
    did: ['agent_did'],
    text: ['agent_uri'],
    json: ['list_record'],
  },
  conversations: {
    cols: RECORD_COLUMNS,
    did: [],
    text: [],
  },
  agents: {
    cols: [...RECORD_COLUMNS, 'template_hash'],
    did: [],
    text: [],
  },
}

function copySql(table: string, part: number, parts: number): string {
  const c = COPY_COLUMNS[table]
  const json = ['record', ...(c.json ?? [])]
  const cols = ['did', ...json, ...c.cols, ...c.did, ...c.text]
  const values = [
    'm.new_did',
    ...json.map((x) => `replace(t.${x}::text, m.old_did, m.new_did)::jsonb`),
    ...c.cols.map((x) => `t.${x}`),
    ...c.did.map((x) => `CASE WHEN t.${x} = m.old_did THEN m.new_did ELSE t.${x} END`),
    ...c.text.map((x) => `replace(t.${x}, m.old_did, m.new_did)`),
  ]
  return `INSERT INTO ${table} (${cols.join(', ')})
    SELECT ${values.join(', ')} FROM ${table} t JOIN bench_didmap m ON m.old_did = t.did
    WHERE m.k % ${parts} = ${part}`
}

export async function loadReadDataset(
  rt: Runtime,
  dbUrl: string,
  target: number,
  seedPrompts: number,
  log: (msg: string) => void,
): Promise<LoadResult> {
  const t0 = performance.now()
  const collections = new Set(COLLECTIONS)
  const gen = benchGenerator({ dids: Math.max(20, Math.round(seedPrompts / 15)), seed: 11 })
  let seedEvents = 0
  let live = 0
  const countLive = async () =>
    Number(
      (
        await rt.ctx.db.rows<{ n: number }>(
          sql`SELECT count(*)::int AS n FROM prompts WHERE NOT deleted`,
        )
      )[0].n,
    )
  while (live < Math.min(seedPrompts, target)) {
    const batch: IndexEvent[] = []
    while (batch.length < 1000) {
      const res = normalizeJetstreamEvent(JSON.stringify(gen.next()), { collections })
      if (res.ok && res.item.event) batch.push(res.item.event)
    }
    await applyBatch(rt.ctx, batch, null)
    seedEvents += batch.length
    live = await countLive()
  }
  const seedS = (performance.now() - t0) / 1000
  log(`seeded ${live} prompts from ${seedEvents} events in ${seedS.toFixed(1)} s`)

  const copies = Math.max(0, Math.ceil(target / live) - 1)
  const t1 = performance.now()
  const admin = rawClient(dbUrl, 2)
  try {
    await admin.unsafe(`CREATE TABLE bench_didmap AS
      SELECT d.did AS old_did, k,
        'did:plc:' || translate(substr(md5(d.did || ':' || k), 1, 24), '0189', 'wxyz') AS new_did
      FROM (SELECT DISTINCT did FROM prompts) d, generate_series(1, ${copies}) k`)
    await admin.unsafe('CREATE INDEX ON bench_didmap (old_did)')
    // Two statements at a time: one backend per core.
    for (const table of Object.keys(COPY_COLUMNS)) {
      await Promise.all([0, 1].map((part) => admin.unsafe(copySql(table, part, 2))))
    }
    await Promise.all(
      [0, 1].map((part) =>
        admin.unsafe(`INSERT INTO accounts (did, active, status, handle, operator_hidden, last_rev, updated_at)
          SELECT m.new_did, a.active, a.status, NULL, a.operator_hidden, a.last_rev, a.updated_at
          FROM accounts a JOIN bench_didmap m ON m.old_did = a.did WHERE m.k % 2 = ${part}`),
      ),
    )
    const copyS = (performance.now() - t1) / 1000
    log(`copied ${copies} times in ${copyS.toFixed(1)} s`)
    const t2 = performance.now()
    await Promise.all(
      ['prompts', 'conversations', 'agents', 'accounts'].map((t) =>
        admin.unsafe(`VACUUM ANALYZE ${t}`),
      ),
    )
    const vacuumS = (performance.now() - t2) / 1000
    const prompts = await countLive()
    log(`${prompts} prompts after vacuum (${vacuumS.toFixed(1)} s)`)
    return { seedEvents, seedPrompts: live, copies, prompts, seedS, copyS, vacuumS }
  } finally {
    await admin.end()
  }
}
