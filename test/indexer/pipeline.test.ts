import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Database } from '../../src/db/client.ts'
import { getCursor } from '../../src/db/read/stats.ts'
import { IngestPipeline, type PipelineOptions } from '../../src/indexer/pipeline.ts'
import { timeCursor } from '../../src/model/cursor.ts'
import type { SourceItem } from '../../src/model/events.ts'
import { testContext } from '../helpers/context.ts'
import { createTestDatabase } from '../helpers/db.ts'
import { NSIDS, World } from '../helpers/events.ts'
import { getPrompt } from '../helpers/get-prompt.ts'

let db: Database
beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(async () => db?.close())

const w = new World()
let n = 0
function pipeline(over: Partial<PipelineOptions> = {}) {
  const ctx = testContext(db)
  const key = `test-${++n}`
  const p = new IngestPipeline(ctx, {
    source: 'replay',
    provenance: 'replay',
    key,
    batchSize: 100,
    batchDelayMs: 1,
    queueSize: 1000,
    cursorIntervalMs: 10,
    ...over,
  })
  return { p, ctx, key, done: p.run() }
}
const item = (event: SourceItem['event'], bytes = 100): SourceItem => ({
  event,
  cursor: timeCursor(w.tick()),
  timeUs: w.us,
  bytes,
})
const counter = async (ctx: ReturnType<typeof testContext>, outcome: string) =>
  (await ctx.metrics.eventsTotal.get()).values
    .filter((v) => v.labels.outcome === outcome)
    .reduce((s, v) => s + v.value, 0)

describe('IngestPipeline', () => {
  it('a full queue (by bytes) makes the reader wait until the writer takes a batch', async () => {
    const { p, done } = pipeline({ queueBytes: 1000, batchDelayMs: 50 })
    const did = 'did:plc:pipelinebytesaaaaaaaaa'
    // 10 items of 100 bytes fill the queue; the 11th push waits.
    for (let i = 0; i < 10; i++) await p.push(item(w.conversation({ did, rkey: w.tid() })))
    let eleventh = false
    const pending = p.push(item(null)).then(() => {
      eleventh = true
    })
    expect(eleventh).toBe(false)
    await pending
    expect(eleventh).toBe(true)
    p.stop()
    await done
    expect(p.committedEvents).toBe(10)
  })

  it('splits batches by bytes', async () => {
    const { p, ctx, done } = pipeline({ batchBytes: 250 })
    const did = 'did:plc:pipelinebatchaaaaaaaaa'
    for (let i = 0; i < 9; i++) await p.push(item(w.conversation({ did, rkey: w.tid() })))
    p.stop()
    await done
    const batches = (await ctx.metrics.batchDurationSeconds.get()).values.find((v) =>
      v.metricName?.endsWith('_count'),
    )
    expect(batches?.value).toBe(3) // 9 events of 100 bytes, at most 250 bytes a batch
  })

  it('one event the database refuses costs only itself; the cursor moves past it', async () => {
    const { p, ctx, key, done } = pipeline()
    const did = 'did:plc:pipelinepoisonaaaaaaaa'
    const good = w.tid()
    await p.push(item(w.prompt({ did, rkey: good })))
    // jsonb cannot hold \u0000: Postgres refuses the whole statement, every time.
    await p.push(
      item(
        w.conversation({
          did,
          rkey: w.tid(),
          record: {
            $type: NSIDS.conversation,
            t: 'a\u0000b',
          },
        }),
      ),
    )
    const last = item(null)
    await p.push(last)
    p.stop()
    await done
    expect(await getPrompt(db, NSIDS, did, good)).not.toBeNull()
    expect(await counter(ctx, 'error')).toBe(1)
    expect(await getCursor(db, 'replay', key)).toBe(last.cursor?.value)
  })

  it('frames with nothing to index still move the stored cursor', async () => {
    const { p, key, done } = pipeline()
    let last: SourceItem | null = null
    for (let i = 0; i < 50; i++) {
      last = item(null)
      await p.push(last)
    }
    await new Promise((r) => setTimeout(r, 50))
    expect(await getCursor(db, 'replay', key)).toBe(last!.cursor?.value)
    p.stop()
    await done
  })

  it('a shutdown commits the batch in flight and drops the queue; the cursor stays before it', async () => {
    const { p, key, done } = pipeline({ batchSize: 5, batchDelayMs: 0 })
    const did = 'did:plc:pipelineshutdownaaaaaa'
    const pushed: SourceItem[] = []
    for (let i = 0; i < 40; i++) {
      const it = item(w.conversation({ did, rkey: w.tid() }))
      pushed.push(it)
      await p.push(it)
    }
    p.stop({ drain: false })
    // A later draining stop (the source ending after the abort) must not bring the queue back.
    p.stop()
    const late = item(null)
    await p.push(late)
    await done
    const committed = p.committedEvents
    expect(committed).toBeGreaterThan(0)
    expect(committed).toBeLessThan(pushed.length)
    expect(await getCursor(db, 'replay', key)).toBe(pushed[committed - 1].cursor?.value)
  })
})
