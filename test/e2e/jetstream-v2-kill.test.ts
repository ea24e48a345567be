import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  demoDictionary,
  type JetstreamV2Server,
  startJetstreamV2Server,
} from '../../demo-network/jetstream-v2-server.ts'
import { type Database, openDatabase } from '../../src/db/client.ts'
import { saveCursor } from '../../src/db/writes.ts'
import { seqCursor } from '../../src/model/cursor.ts'
import { getJson, type ServingCli, startServing, waitFor } from '../helpers/cli.ts'
import { createTestDatabase } from '../helpers/db.ts'
import { account, commit, DID, tid } from '../helpers/jetstream-json.ts'
import { startIndexer } from '../helpers/jetstream-v2-indexer.ts'
import { testTraffic } from '../helpers/traffic.ts'

// kill -9 of `prompt-appview run` in the middle of a Jetstream v2 replay (zstd frames, a
// #sync with its replacement creates inside): after a restart the canonical state equals
// an uninterrupted run's, on the same driver (PGlite on disk, or Postgres).

let server: JetstreamV2Server
let lastSeq = 0
const R = tid(900)

beforeAll(async () => {
  server = await startJetstreamV2Server({ dictionary: demoDictionary() })
  const gen = testTraffic({ seed: 5, dids: 8, agoSeconds: 600 })
  const at = (e: ReturnType<typeof commit>, n: number) => ({
    ...e,
    time_us: gen.options.startTimeUs + n,
  })
  server.append([at(commit(1), 1), at(commit(2), 2), at(commit(3), 3)])
  server.append(gen.generate(400))
  server.appendSync(DID, R, [commit(1, { rev: R }), commit(3, { rev: R })])
  server.append([account(4, { active: true, status: null })])
  server.append(gen.generate(400))
  lastSeq = server.lastSeq
})
afterAll(async () => {
  await server?.close()
})

/** A fresh store the CLI can open from its own process, and how to open it here. */
async function store(): Promise<{
  env: Record<string, string>
  open: () => Promise<Database>
  drop: () => Promise<void>
}> {
  const serverUrl = process.env.TEST_DATABASE_URL
  if (!serverUrl) {
    const dir = mkdtempSync(join(tmpdir(), 'pav-v2-kill-'))
    const open = async () => openDatabase({ url: null, dataDir: dir })
    return {
      env: { DATA_DIR: dir },
      open,
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    }
  }
  const name = `pav_kill_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} })
  await admin.unsafe(`CREATE DATABASE ${name}`)
  const url = Object.assign(new URL(serverUrl), { pathname: `/${name}` }).toString()
  return {
    env: { DATABASE_URL: url },
    open: async () => openDatabase({ url, dataDir: null, maxConnections: 2 }),
    drop: async () => {
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await admin.end()
    },
  }
}

/**
 * The canonical state: every record's key, rev, cid, tombstone, visibility, recompiles and
 * content (flags while live), the revision history of live prompts, and accounts. Left out
 * on purpose: change-log bookkeeping (`emitted_*`), derived columns of tombstones, and the
 * history of purged repos, which depend on where batches happened to be cut.
 */
async function digest(db: Database): Promise<unknown[]> {
  const out: unknown[] = []
  for (const t of ['prompts', 'conversations', 'agents']) {
    const flags = t === 'prompts' ? sql`CASE WHEN deleted THEN NULL ELSE flags END` : sql`NULL`
    out.push(
      await db.rows(sql`SELECT did, rkey, rev, cid, deleted, hidden, record, ${flags} AS flags,
        ${t === 'prompts' ? sql`recompiles` : sql`NULL`} AS recompiles
        FROM ${sql.raw(t)} ORDER BY did, rkey`),
    )
  }
  out.push(
    await db.rows(sql`SELECT r.did, r.rkey, r.rev, r.cid FROM prompt_revisions r
      JOIN prompts p ON p.did = r.did AND p.rkey = r.rkey AND NOT p.deleted
      ORDER BY r.did, r.rkey, r.rev`),
  )
  out.push(await db.rows(sql`SELECT did, active, status FROM accounts ORDER BY did`))
  return out
}

describe('Jetstream v2: kill -9 during a replay', () => {
  it('resumes with the canonical state of an uninterrupted run', async () => {
    expect(lastSeq).toBeGreaterThan(800)
    const ref = await createTestDatabase()
    // A v2 source's cursor key is its URL, as the CLI half below stores it. (Starting an
    // indexer only to read its key and stopping it at once cost the idle timeout, 120 s: a
    // stop during the dictionary fetch goes unheard by the session opened after it.)
    await saveCursor(
      ref.orm,
      { source: 'jetstream', key: server.url, cursor: seqCursor(0), lastEventUs: 0 },
      new Date(),
    )
    const replay = startIndexer(ref, 'v2', server.url)
    await waitFor('reference run', async () => (await replay.cursor()) === lastSeq, 120_000)
    await replay.stop()
    const expected = await digest(ref)
    await ref.close()

    const s = await store()
    try {
      const seed = await s.open()
      await seed.migrate()
      await saveCursor(
        seed.orm,
        { source: 'jetstream', key: server.url, cursor: seqCursor(0), lastEventUs: 0 },
        new Date(),
      )
      await seed.close()
      const env = {
        ...s.env,
        JETSTREAM_URL: server.url,
        PLC_URL: 'http://127.0.0.1:9',
        BATCH_SIZE: '50',
      }
      const cursorOf = async (cli: ServingCli) =>
        (await getJson(`${cli.url}/v1/stats`)).ingest.cursor as number
      let cli = await startServing(['run'], env)
      await waitFor(
        'part of the replay',
        async () => (await cursorOf(cli)) >= lastSeq * 0.3,
        120_000,
      )
      cli.child.kill('SIGKILL')
      await cli.exited
      cli = await startServing(['run'], env)
      await waitFor('the rest', async () => (await cursorOf(cli)) === lastSeq, 120_000)
      cli.child.kill('SIGTERM')
      expect(await cli.exited).toBe(0)
      const after = await s.open()
      try {
        const got = await digest(after)
        expect(got).toEqual(expected)
        const tombstoned = await after.rows<{ rkey: string; deleted: boolean }>(
          sql`SELECT rkey, deleted FROM prompts WHERE did = ${DID} ORDER BY rkey`,
        )
        expect(tombstoned.map((r) => [r.rkey, r.deleted])).toEqual([
          [tid(1), false],
          [tid(2), true],
          [tid(3), false],
        ])
      } finally {
        await after.close()
      }
    } finally {
      await s.drop()
    }
  }, 400_000)
})
