import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator'
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { trustedStartCursor } from '../../src/cli/start-cursor.ts'
import { type Database, MIGRATIONS_DIR } from '../../src/db/client.ts'
import { readStoredCursor, saveCursor } from '../../src/db/writes.ts'
import type { DidResolver } from '../../src/ingest/did-resolver.ts'
import { createFirehoseSource } from '../../src/ingest/firehose/source.ts'
import { createJetstreamSource } from '../../src/ingest/jetstream/v1.ts'
import { createJetstreamV2Source } from '../../src/ingest/jetstream/v2.ts'
import { createReplaySource } from '../../src/ingest/replay.ts'
import type { Source } from '../../src/ingest/source.ts'
import { type SourceCursor, seqCursor, timeCursor } from '../../src/model/cursor.ts'
import { testContext } from '../helpers/context.ts'
import { createTestDatabase, usingPostgres } from '../helpers/db.ts'
import { COLLECTIONS, captureLogger, collectingSink } from '../helpers/ingest-kit.ts'
import { commit, T0 } from '../helpers/jetstream-json.ts'
import { ingestToEnd, refusals, storedCursor, testRuntime } from '../helpers/restart-kit.ts'

// A stored cursor says what it counts (src/model/cursor.ts): `seq` or `time_us`. Rows stored
// before the kind existed are given one by migration 0012; a source resumes only from the
// kinds it names, and a stored cursor of another kind is refused at start like a future time
// (counted, logged with the backfill command, reset: the run starts as if none was stored).

const NOW_US = Date.now() * 1000

describe('migration 0012: bare stored cursors get their kind', () => {
  it('by source where it always counted one thing, by size for Jetstream', async () => {
    // Migrations up to the one before the kind, bare rows, then the rest.
    const dir = mkdtempSync(join(tmpdir(), 'pav-migrations-'))
    const db = await createTestDatabase()
    try {
      cpSync(MIGRATIONS_DIR, dir, { recursive: true })
      const journalPath = join(dir, 'meta', '_journal.json')
      const journal = JSON.parse(readFileSync(journalPath, 'utf8'))
      const upTo = journal.entries.findIndex((e: { tag: string }) =>
        e.tag.endsWith('ingest_cursor_kind'),
      )
      expect(upTo).toBeGreaterThan(0)
      writeFileSync(
        journalPath,
        JSON.stringify({ ...journal, entries: journal.entries.slice(0, upTo) }),
      )
      // createTestDatabase migrated fully: start again from an empty schema.
      await db.rows(sql`DROP SCHEMA public CASCADE`)
      await db.rows(sql`DROP SCHEMA IF EXISTS drizzle CASCADE`)
      await db.rows(sql`CREATE SCHEMA public`)
      const migrate = (folder: string) =>
        usingPostgres()
          ? migratePostgres(db.orm as never, { migrationsFolder: folder })
          : migratePglite(db.orm as never, { migrationsFolder: folder })
      await migrate(dir)

      const bare: Array<[string, string, number]> = [
        // Jetstream: v1 stored time_us, or the seq a v2 server adds to v1 lines; v2 seqs.
        ['jetstream', 'wss://v1.example/subscribe', T0],
        ['jetstream', 'wss://v1-on-v2.example/subscribe', 123_456],
        ['jetstream', 'wss://v2.example/xrpc/network.bsky.jetstream.subscribeEvents', 7],
        ['jetstream', 'wss://edge.example/a', 1e15],
        ['jetstream', 'wss://edge.example/b', 1e15 - 1],
        // A replay file's cursor was always a time_us, even a test file's small ones.
        ['replay', '/data/small-times.ndjson', 12],
        ['replay', '/data/jetstream-dump.ndjson', T0],
        // A firehose cursor was always a seq.
        ['firehose', 'wss://relay.example', 9_876_543],
      ]
      for (const [source, key, cursor] of bare)
        await db.rows(sql`INSERT INTO ingest_cursors (source, key, cursor, last_event_us, updated_at)
          VALUES (${source}, ${key}, ${cursor}, ${T0}, now())`)

      await migrate(MIGRATIONS_DIR)
      const kinds = []
      for (const [source, key] of bare) kinds.push(await readStoredCursor(db, source, key))
      expect(kinds).toEqual(
        [
          timeCursor(T0),
          seqCursor(123_456),
          seqCursor(7),
          timeCursor(1e15),
          seqCursor(1e15 - 1),
          timeCursor(12),
          timeCursor(T0),
          seqCursor(9_876_543),
        ].map((cursor) => ({ cursor, lastEventUs: T0, savedAtMs: expect.any(Number) })),
      )
      // From now on every row states its kind, one of the two.
      const insert = (kind: string | null) =>
        db.rows(sql`INSERT INTO ingest_cursors (source, key, kind, cursor, updated_at)
          VALUES ('replay', ${`/data/${kind}`}, ${kind}, 1, now())`)
      await expect(insert(null)).rejects.toThrow()
      await expect(insert('block')).rejects.toThrow()
    } finally {
      await db.close()
      rmSync(dir, { recursive: true, force: true })
    }
  }, 120_000)
})

describe('a stored cursor is resumed by its kind', () => {
  let db: Database
  let dir: string
  beforeAll(async () => {
    db = await createTestDatabase()
    dir = mkdtempSync(join(tmpdir(), 'pav-start-cursor-'))
  })
  afterAll(async () => {
    await db?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  let n = 0
  /** Stores `cursor` for `source` and reads it back the way a start does. */
  async function start(source: Source, cursor: SourceCursor) {
    const key = `${source.key}#${++n}`
    await saveCursor(db.orm, { source: source.name, key, cursor, lastEventUs: null }, new Date())
    const { logger, logs } = captureLogger()
    const ctx = { ...testContext(db), logger }
    const got = await trustedStartCursor(ctx, source, key)
    return {
      got,
      logs,
      stored: await readStoredCursor(db, source.name, key),
      refused: await refusals(ctx.metrics, source.name, 'stored_cursor'),
    }
  }

  const deps = () => ({
    collections: COLLECTIONS,
    ...captureLogger(),
    metrics: testContext(db).metrics,
  })
  const replay = () => createReplaySource({ file: join(dir, 'x.ndjson'), ...deps() })
  const firehose = () =>
    createFirehoseSource({
      url: 'ws://127.0.0.1:1',
      resolver: {} as DidResolver,
      verifyHandle: async () => null,
      ...deps(),
    })
  const v1 = () =>
    createJetstreamSource({
      url: 'ws://127.0.0.1:1/subscribe',
      wantedCollections: COLLECTIONS,
      rewindSeconds: 1,
      ...deps(),
    })
  const v2 = () =>
    createJetstreamV2Source({
      url: 'ws://127.0.0.1:1/xrpc/network.bsky.jetstream.subscribeEvents',
      wantedCollections: COLLECTIONS,
      ...deps(),
    })

  it('each source names the kinds it resumes from', () => {
    expect(replay().resumesFrom).toEqual(['time_us'])
    expect(firehose().resumesFrom).toEqual(['seq'])
    // v1 counts time, and the seq a v2 server adds to v1 lines; v2 counts seqs, and its
    // server translates a time_us cursor.
    expect(v1().resumesFrom).toEqual(['time_us', 'seq'])
    expect(v2().resumesFrom).toEqual(['seq', 'time_us'])
  })

  it('a cursor of its own kind is resumed as stored, whatever its size', async () => {
    // A seq above 1e15 is still a seq: no time check, however far "ahead" the number is.
    const big = seqCursor(5 * NOW_US)
    expect(await start(v2(), big)).toMatchObject({ got: big, stored: { cursor: big }, refused: 0 })
    // A small time_us is still a time_us (a test file's), a small seq still a seq.
    expect((await start(replay(), timeCursor(12))).got).toEqual(timeCursor(12))
    expect((await start(firehose(), seqCursor(3))).got).toEqual(seqCursor(3))
    expect((await start(v1(), seqCursor(3))).got).toEqual(seqCursor(3))
    expect((await start(v1(), timeCursor(T0))).got).toEqual(timeCursor(T0))
    expect((await start(v2(), timeCursor(T0))).got).toEqual(timeCursor(T0))
  })

  it('a time_us in the future is refused by its kind', async () => {
    const future = timeCursor(NOW_US + 3_600_000_000)
    const r = await start(v1(), future)
    expect(r).toMatchObject({ got: null, stored: null, refused: 1 })
    expect(String(r.logs.find((l) => l.level === 50)?.msg)).toContain('future time')
  })

  it('a cursor of another kind is refused: counted, logged, reset, and the run starts without one', async () => {
    for (const [source, cursor] of [
      [firehose(), timeCursor(T0)],
      [replay(), seqCursor(42)],
    ] as const) {
      const r = await start(source, cursor)
      expect(r).toMatchObject({ got: null, stored: null, refused: 1 })
      const err = r.logs.find((l) => l.level === 50)
      expect(err).toMatchObject({ storedKind: cursor.kind, storedCursor: cursor.value })
      expect(String(err?.msg)).toContain(`stored cursor is a ${cursor.kind}`)
      expect(String(err?.msg)).toContain('prompt-appview backfill')
    }
  })

  it('end to end: a replay over a foreign stored cursor reads its file from the top', async () => {
    const file = join(dir, 'foreign.ndjson')
    await writeFile(file, `${[1, 2, 3].map((i) => JSON.stringify(commit(i))).join('\n')}\n`)
    // Read as a time, this seq would skip the first two lines.
    await saveCursor(
      db.orm,
      { source: 'replay', key: file, cursor: seqCursor(T0 + 2000), lastEventUs: null },
      new Date(),
    )
    const rt = testRuntime(db)
    const handle = await ingestToEnd(
      rt,
      createReplaySource({
        file,
        collections: COLLECTIONS,
        logger: rt.ctx.logger,
        metrics: rt.ctx.metrics,
      }),
    )
    expect(handle.pipeline.committedEvents).toBe(3)
    expect(await refusals(rt.ctx.metrics, 'replay', 'stored_cursor')).toBe(1)
    expect(await storedCursor(db, 'replay', file)).toMatchObject({
      kind: 'time_us',
      cursor: T0 + 3000,
    })
  })

  it('a source handed a start cursor of another kind throws instead of guessing', async () => {
    const file = join(dir, 'empty.ndjson')
    await writeFile(file, '')
    const source = createReplaySource({ file, ...deps() })
    await expect(
      source.run(collectingSink(), seqCursor(5), new AbortController().signal),
    ).rejects.toThrow('replay resumes from a time_us cursor, not a seq')
  })
})
