import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import type { Database } from '../../src/db/client.ts'
import { getCursor } from '../../src/db/read/stats.ts'
import { IngestPipeline } from '../../src/indexer/pipeline.ts'
import { timeCursor } from '../../src/model/cursor.ts'
import type { SourceItem } from '../../src/model/events.ts'
import { restoreClock } from '../helpers/clock.ts'
import { testContext } from '../helpers/context.ts'
import { createTestDatabase } from '../helpers/db.ts'
import { NSIDS, World } from '../helpers/events.ts'
import { getPrompt } from '../helpers/get-prompt.ts'

// The wall clock set back by ten minutes (an NTP step) while the writer waits for a trickle
// to fill a batch, or for the cursor's interval: neither wait may grow by the jump. The
// writer measures them on the monotonic clock.

const TEN_MINUTES = 10 * 60_000

let db: Database
beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(async () => db?.close())
afterEach(restoreClock)

const w = new World()

function pipeline(key: string) {
  const p = new IngestPipeline(testContext(db), {
    source: 'replay',
    provenance: 'replay',
    key,
    batchSize: 100,
    batchDelayMs: 200,
    queueSize: 1000,
    cursorIntervalMs: 200,
  })
  return { p, done: p.run() }
}

/** From now on Date.now() answers `shiftMs` away from the real clock. */
function jumpClock(shiftMs: number): void {
  const real = Date.now.bind(Date)
  vi.spyOn(Date, 'now').mockImplementation(() => real() + shiftMs)
}

async function within<T>(ms: number, read: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  const deadline = performance.now() + ms
  let v = await read()
  while (!ok(v) && performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20))
    v = await read()
  }
  return v
}

describe('a wall clock that jumps under the writer', () => {
  for (const shift of [-TEN_MINUTES, TEN_MINUTES]) {
    it(`a trickle is committed within its batch delay when the clock jumps ${shift < 0 ? 'back' : 'forward'} 10 min`, async () => {
      const key = `clock-${shift}`
      const { p, done } = pipeline(key)
      const did = `did:plc:clockjump${shift < 0 ? 'back' : 'fwd'}aaaaaaaaaaa`
      const rkey = w.tid()
      const item: SourceItem = {
        event: w.prompt({ did, rkey }),
        cursor: timeCursor(w.tick()),
        timeUs: w.us,
        bytes: 100,
      }
      await p.push(item)
      await new Promise((r) => setTimeout(r, 20))
      jumpClock(shift)
      const got = await within(
        3_000,
        () => getPrompt(db, NSIDS, did, rkey),
        (v) => v !== null,
      )
      expect(got, 'the event waited for the clock, not for its batch delay').not.toBeNull()
      // Frames with nothing to index still move the cursor on its interval after the jump.
      const last: SourceItem = { event: null, cursor: timeCursor(w.tick()), timeUs: w.us }
      await p.push(last)
      const cursor = await within(
        3_000,
        () => getCursor(db, 'replay', key),
        (c) => c === last.cursor?.value,
      )
      expect(cursor).toBe(last.cursor?.value)
      p.stop()
      await done
    })
  }
})
