import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { JetstreamEvent } from '../../demo-network/generator.ts'
import type { Database } from '../../src/db/client.ts'
import { getStats } from '../../src/db/read/stats.ts'
import { createReplaySource } from '../../src/ingest/replay.ts'
import { createTestDatabase } from '../helpers/db.ts'
import { NSIDS } from '../helpers/events.ts'
import {
  expectSameEndState,
  ingestToEnd,
  refusals,
  type StateDigest,
  stateDigest,
  storedCursor,
  testRuntime,
} from '../helpers/restart-kit.ts'
import { testTraffic } from '../helpers/traffic.ts'

// The reproduction: one refused replay line whose time_us is the largest safe
// integer used to become the stored cursor, so a restart skipped every later line and the
// lag read 0. Now a line moves the cursor only when its DID and time can be read and the time
// is not in the future; a restarted run ends where an uninterrupted one does.

const COLLECTIONS = Object.values(NSIDS)
const FAR = Number.MAX_SAFE_INTEGER
let dir: string
let events: JetstreamEvent[]
let lines: string[]
let cut: number
const dbs: Database[] = []

async function freshDb(): Promise<Database> {
  const db = await createTestDatabase()
  dbs.push(db)
  return db
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'poisoned-replay-'))
  const gen = testTraffic({ seed: 9, dids: 6, agoSeconds: 600 })
  events = gen.generate(160)
  const good = events.map((e) => JSON.stringify(e))
  const firstPrompt = events.find(
    (e) => e.kind === 'commit' && e.commit.collection === NSIDS.prompt,
  )!
  cut = 130
  lines = [
    ...good.slice(0, 100),
    // The line: refused (bad DID), and its time must not become the cursor.
    JSON.stringify({ ...firstPrompt, did: 'not-a-did', time_us: FAR }),
    // A valid event an hour ahead: applied, but refused for the cursor and the lag.
    JSON.stringify({ ...events[100], time_us: Date.now() * 1000 + 3_600_000_000 }),
    // A bad record with a readable envelope: an event that was read, the cursor moves past it.
    JSON.stringify({
      ...firstPrompt,
      time_us: events[100].time_us + 1,
      commit: { ...(firstPrompt as unknown as { commit: object }).commit, record: 7 },
    }),
    ...good.slice(101),
  ]
})
afterAll(async () => {
  for (const db of dbs) await db.close()
  await rm(dir, { recursive: true, force: true })
})

const replay = (rt: ReturnType<typeof testRuntime>, file: string) =>
  createReplaySource({
    file,
    collections: COLLECTIONS,
    logger: rt.ctx.logger,
    metrics: rt.ctx.metrics,
  })

/** The reference run: all of `file`, one event per batch, in a database of its own. */
async function referenceRun(file: string): Promise<StateDigest> {
  const db = await freshDb()
  const rt = testRuntime(db, { BATCH_SIZE: '1' })
  await ingestToEnd(rt, replay(rt, file))
  return stateDigest(db)
}

// Both tests end on all of `lines`, and the digest holds no cursor: one reference serves both.
let referenceDigest: Promise<StateDigest> | undefined
function reference(): Promise<StateDigest> {
  referenceDigest ??= (async () => {
    const file = join(dir, 'reference.ndjson')
    await writeFile(file, `${lines.join('\n')}\n`)
    return referenceRun(file)
  })()
  return referenceDigest
}

describe('a poisoned replay line', () => {
  it('never becomes the cursor: a restart after it loses nothing, and the lag stays truthful', async () => {
    const expected = await reference()

    // The same file, read up to line `cut`, stopped, then read to the end after a restart.
    const file = join(dir, 'restarted.ndjson')
    await writeFile(file, `${lines.slice(0, cut).join('\n')}\n`)
    const dbB = await freshDb()
    const rt1 = testRuntime(dbB)
    const first = await ingestToEnd(rt1, replay(rt1, file))
    const lastInPrefix = JSON.parse(lines[cut - 1]).time_us
    expect(await storedCursor(dbB, 'replay', first.key)).toEqual({
      kind: 'time_us',
      cursor: lastInPrefix,
      lastEventUs: lastInPrefix,
    })
    expect(await refusals(rt1.ctx.metrics, 'replay', 'future_time')).toBe(1)
    expect(first.pipeline.newestEventUs).toBe(lastInPrefix)

    await writeFile(file, `${lines.join('\n')}\n`)
    const rt2 = testRuntime(dbB)
    await ingestToEnd(rt2, replay(rt2, file))
    expectSameEndState(await stateDigest(dbB), expected)
    // Every generated event of the restarted run is in: its last prompt, for one.
    const last = events.at(-1)!
    expect(await storedCursor(dbB, 'replay', first.key)).toMatchObject({ cursor: last.time_us })

    const stats = await getStats(dbB, { source: 'replay', key: first.key })
    expect(stats.ingest.lastEventAt).toBe(new Date(Math.floor(last.time_us / 1000)).toISOString())
    // About ten minutes behind (the generated traffic started 600 s ago), never 0.
    expect(stats.ingest.lagSeconds).toBeGreaterThan(500)
  }, 240_000)

  it('a future cursor stored by an earlier version is refused, counted and reset at start', async () => {
    const file = join(dir, 'stored.ndjson')
    await writeFile(file, `${lines.join('\n')}\n`)
    const expected = await reference()

    const dbB = await freshDb()
    await dbB.rows(sql`INSERT INTO ingest_cursors
      (source, key, kind, cursor, last_event_us, updated_at)
      VALUES ('replay', ${file}, 'time_us', ${FAR}, ${FAR}, now())`)
    const rt = testRuntime(dbB)
    await ingestToEnd(rt, replay(rt, file))
    expect(await refusals(rt.ctx.metrics, 'replay', 'stored_cursor')).toBe(1)
    expectSameEndState(await stateDigest(dbB), expected)
    const last = events.at(-1)!.time_us
    expect(await storedCursor(dbB, 'replay', file)).toEqual({
      kind: 'time_us',
      cursor: last,
      lastEventUs: last,
    })
  }, 240_000)
})
