import pino from 'pino'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createWorkerPool, type WorkerPool } from '../../src/workers/pool.ts'

// The pool both worker pools are built on (ingest/firehose/verify-pool.ts, indexer/analysis-pool.ts):
// a reply for each request, or null when no worker answered, never a rejection.

type Echo = { n: number; fail?: boolean; fn?: () => void }
let pool: WorkerPool<Echo, { doubled: number }> | null = null
afterEach(async () => {
  await pool?.close()
  pool = null
})

const ECHO = new URL('../fixtures/doubling-worker.ts', import.meta.url)
const BROKEN = new URL('../fixtures/broken-worker.ts', import.meta.url)
const SILENT = new URL('../fixtures/silent-analysis-worker.ts', import.meta.url)
const CRASHING = new URL('../fixtures/crashing-verify-worker.ts', import.meta.url)

function capture() {
  const lines: Array<{ msg: string }> = []
  const logger = pino({ level: 'warn' }, { write: (l: string) => lines.push(JSON.parse(l)) })
  return { logger, lines }
}

const open = (workerUrl: URL, threads = 2, logger = capture().logger) =>
  createWorkerPool<Echo, { doubled: number }>({ name: 'test', threads, workerUrl, logger })

describe('createWorkerPool', () => {
  it('answers every request with its own reply, spread over the workers', async () => {
    pool = open(ECHO)
    expect(pool.live).toBe(2)
    const replies = await Promise.all(
      Array.from({ length: 500 }, (_, n) =>
        (pool as WorkerPool<Echo, { doubled: number }>).request({ n }),
      ),
    )
    expect(replies.map((r) => (r && 'doubled' in r ? r.doubled : r))).toEqual(
      Array.from({ length: 500 }, (_, n) => 2 * n),
    )
  })

  it("hands back what the worker's handler threw, as its message", async () => {
    pool = open(ECHO, 1)
    const reply = await pool.request({ n: 7, fail: true })
    expect(reply).toEqual({ error: 'cannot double 7' })
    expect(await pool.request({ n: 8 })).toEqual({ doubled: 16 })
  })

  it('answers null for a request the structured clone refuses, and serves the rest', async () => {
    const { logger, lines } = capture()
    pool = open(ECHO, 1, logger)
    const [refused, fine] = await Promise.all([
      pool.request({ n: 1, fn: () => {} }),
      pool.request({ n: 2 }),
    ])
    // Each request is a message of its own: the refused one alone comes back unanswered.
    expect(refused).toBeNull()
    expect(fine).toEqual({ doubled: 4 })
    expect(lines.map((l) => l.msg)).toContain('test requests not sent to the worker')
    expect(await pool.request({ n: 3 })).toMatchObject({ doubled: 6 })
  })

  it('answers null for the work of a worker that died, and starts another', async () => {
    const { logger, lines } = capture()
    pool = open(CRASHING, 1, logger)
    expect(await pool.request({ n: 1 })).toBeNull()
    expect(await pool.request({ n: 2 })).toBeNull()
    expect(lines.map((l) => l.msg)).toContain(
      'test worker died; its work is done on the main thread and a new worker starts',
    )
    expect(pool.live).toBe(1)
  })

  it('stops starting workers that die as they load, after at most five deaths', async () => {
    const { logger, lines } = capture()
    pool = open(BROKEN, 1, logger)
    await vi.waitFor(() => expect(pool?.live).toBe(0), { timeout: 20_000, interval: 50 })
    // piscina starts no worker again after one failed as it loaded; the pool's own bound
    // (five deaths in a row) covers workers that die later.
    await new Promise((r) => setTimeout(r, 500))
    const deaths = lines.filter((l) => l.msg.startsWith('test worker died')).length
    expect(deaths).toBeGreaterThanOrEqual(1)
    expect(deaths).toBeLessThanOrEqual(5)
    const msgs = lines.map((l) => l.msg)
    expect(msgs).toContain('test workers keep dying; their work stays on the main thread')
    expect(await pool.request({ n: 1 })).toBeNull()
  })

  it('answers what is pending with null when closed, and everything after', async () => {
    pool = open(SILENT, 1)
    const pending = pool.request({ n: 1 })
    await new Promise((r) => setTimeout(r, 50))
    await pool.close()
    expect(await pending).toBeNull()
    expect(pool.live).toBe(0)
    expect(await pool.request({ n: 2 })).toBeNull()
  })
})
