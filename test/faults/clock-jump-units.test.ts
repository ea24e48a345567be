import type { AddressInfo } from 'node:net'
import { TID } from '@atproto/common'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { WebSocketServer } from 'ws'
import { AnswerCache } from '../../src/api/answer-cache.ts'
import { AnswerCacheKeeper, CACHE_TRUST_MS } from '../../src/api/changes/cache-keeper.ts'
import { ChangeTail } from '../../src/api/changes/tail.ts'
import { backgroundCount } from '../../src/cli/background-count.ts'
import type { Database } from '../../src/db/client.ts'
import { readStoredCursor, saveCursor } from '../../src/db/writes.ts'
import { createProgressReporter } from '../../src/ingest/backfill/progress.ts'
import { UpstreamLimiter } from '../../src/ingest/backfill/upstream-limiter.ts'
import { checkCommit } from '../../src/ingest/firehose/chain/check-commit.ts'
import { Resyncer } from '../../src/ingest/firehose/chain/resyncer.ts'
import { V2Cursor } from '../../src/ingest/jetstream/v2-cursor.ts'
import { SyncWindows, watchQuiet } from '../../src/ingest/jetstream/v2-sync.ts'
import type { Source } from '../../src/ingest/source.ts'
import { type SessionEnd, WsSession } from '../../src/ingest/ws-source.ts'
import { timeCursor } from '../../src/model/cursor.ts'
import type { RepoSnapshotEvent } from '../../src/model/events.ts'
import { steadyNowMs } from '../../src/observe/clock.ts'
import { makeApp } from '../api/fixtures.ts'
import { restoreClock, sleep, steppableClock, TEN_MINUTES, within } from '../helpers/clock.ts'
import { testContext } from '../helpers/context.ts'
import { createTestDatabase } from '../helpers/db.ts'
import { captureLogger, silentLogger, testMetrics } from '../helpers/ingest-kit.ts'

// The wall clock stepped back and forward by ten minutes (issue 43 item 4) under each part
// that measures a wait: none may end early, none may wait for the jump, and no rate limit
// may lock out. Parts that compare a source's time with now read a wall clock that ignores
// a step back, so nothing valid is refused after one. The guard tests come first: a forward
// step is followed by that clock for the rest of the file, as it would be in a process.

afterEach(restoreClock)

/** A counter's value for the labels given (0 when never counted). */
async function counted(
  c: { get(): Promise<{ values: Array<{ labels: object; value: number }> }> },
  labels: Record<string, string>,
) {
  const { values } = await c.get()
  const hit = values.find((v) =>
    Object.entries(labels).every(([k, x]) => (v.labels as Record<string, unknown>)[k] === x),
  )
  return hit?.value ?? 0
}

const STEPS = [
  ['back', -TEN_MINUTES],
  ['forward', TEN_MINUTES],
] as const

let db: Database
beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(async () => db?.close())

describe('times compared with now, after the clock is set back 10 min', () => {
  it('the steady clock stays in whole milliseconds while it carries on past a step back', async () => {
    steadyNowMs()
    const clock = steppableClock()
    clock.shift = -TEN_MINUTES
    await sleep(3)
    const ms = steadyNowMs()
    // A time in µs made from it is stored as a bigint: a fraction would be refused.
    expect(Number.isInteger(ms)).toBe(true)
    expect(ms).toBeGreaterThan(Date.now() + TEN_MINUTES / 2)
  })

  it('a Jetstream v2 frame sent just before the step is not refused as future', () => {
    const clock = steppableClock()
    const refused: string[] = []
    const c = new V2Cursor({
      refused: (r) => refused.push(r),
      fault: () => {},
      logger: silentLogger(),
    })
    c.start(null)
    const sentUs = Date.now() * 1000
    clock.shift = -TEN_MINUTES
    expect(c.position(1, sentUs)).toEqual({ cursor: 1, timeUs: sentUs })
    expect(refused).toEqual([])
  })

  it('a firehose commit whose rev is now is not refused as a future rev', async () => {
    const clock = steppableClock()
    const rev = TID.nextStr()
    clock.shift = -TEN_MINUTES
    const head = { did: 'did:plc:a', rev: null, data: null, state: 'desynchronized' as const }
    const body = { repo: 'did:plc:a', rev } as unknown as Parameters<typeof checkCommit>[1]
    const deps = { resolveKey: async () => null, match: () => true }
    // Past the clock check, a repo that waits for a resync says so without reading the body.
    expect(await checkCommit(deps as never, body, head, 0)).toEqual({
      kind: 'waiting',
      state: 'desynchronized',
    })
  })

  it('after a restart with the clock 10 min back, the stored cursor and the next frames are not future', async () => {
    const clock = steppableClock()
    const nowUs = Date.now() * 1000
    const source = {
      name: 'jetstream',
      key: 'clock',
      resumesFrom: ['time_us'],
    } as unknown as Source
    const cursor = timeCursor(nowUs)
    await saveCursor(
      db.orm,
      { source: 'jetstream', key: 'clock', cursor, lastEventUs: nowUs },
      new Date(),
    )
    clock.shift = -TEN_MINUTES
    // A new process: its modules (and so its clock) start after the step.
    vi.resetModules()
    const restarted = await import('../../src/cli/start-cursor.ts')
    const { V2Cursor: FreshCursor } = await import('../../src/ingest/jetstream/v2-cursor.ts')
    const ctx = testContext(db)
    expect(await restarted.trustedStartCursor(ctx, source, 'clock')).toEqual(cursor)
    expect(await readStoredCursor(db, 'jetstream', 'clock')).toMatchObject({
      cursor,
      lastEventUs: nowUs,
    })
    const refused: string[] = []
    const next = new FreshCursor({
      refused: (r) => refused.push(r),
      fault: () => {},
      logger: silentLogger(),
    })
    next.start(null)
    expect(next.position(2, nowUs + 1_000_000)).toEqual({ cursor: 2, timeUs: nowUs + 1_000_000 })
    expect(refused).toEqual([])
    expect(await counted(ctx.metrics.cursorRefusedTotal, { reason: 'stored_cursor' })).toBe(0)
  })
})

describe('waits across a 10-minute step of the wall clock', () => {
  for (const [way, shift] of STEPS) {
    it(`a v2 #sync window closes after its quiet period, not ${way === 'back' ? 'never' : 'at once'} (${way})`, async () => {
      const clock = steppableClock()
      const windows = new SyncWindows({ quietSeconds: 1, maxOpen: 10 })
      windows.open('did:plc:quiet', '3kaaaaaaaaaa2', 5, 0)
      const started = performance.now()
      let closedAt: number | null = null
      const watch = watchQuiet({
        handle: async () => 'continue',
        closeQuiet: async () => {
          closedAt ??= performance.now() - started
          windows.closeAll()
          return true
        },
        windows,
        quietMs: 400,
      })
      clock.shift = shift
      for (let i = 0; i < 40 && closedAt === null; i++) await sleep(50)
      await watch.stop()
      expect(closedAt, 'the window never closed').not.toBeNull()
      expect(closedAt).toBeGreaterThanOrEqual(400)
    })

    it(`the upstream limiter waits out a host's reset, no more, no less (${way})`, async () => {
      const clock = steppableClock()
      const limiter = new UpstreamLimiter()
      const stop = new AbortController()
      const req = { url: new URL('http://clock.example/x'), endpoint: 'm', signal: stop.signal }
      const held = async () =>
        new Response('ok', { headers: { 'ratelimit-remaining': '0', 'ratelimit-reset': '1' } })
      await limiter.run(req, held, async () => {})
      clock.shift = shift
      const t = performance.now()
      const second = limiter.run(
        req,
        async () => new Response('ok'),
        async () => 'sent',
      )
      const got = await within(second, 3_000, 'still waiting')
      stop.abort()
      await second.catch(() => {})
      expect(got).toBe('sent')
      expect(performance.now() - t).toBeGreaterThanOrEqual(900)
    })

    it(`a repo's resync budget is neither spent nor refilled by the step (${way})`, async () => {
      const clock = steppableClock()
      const metrics = testMetrics()
      const fetched: number[] = []
      const snapshot = (did: string): RepoSnapshotEvent => ({
        kind: 'snapshot',
        did,
        rev: TID.nextStr(),
        records: [],
        timeUs: 0,
      })
      // Back: one resync spent of five, the next one may run at once. Forward: the only one
      // of the minute is spent, the next one waits for the minute.
      const r = new Resyncer({
        fetchSnapshot: async (did) => {
          fetched.push(performance.now())
          return snapshot(did)
        },
        hostOf: async () => 'pds.example',
        emit: async () => {},
        head: async () => null,
        settle: () => {},
        logger: silentLogger(),
        metrics,
        perRepoPerMinute: way === 'back' ? 5 : 1,
      })
      const did = 'did:plc:budget'
      r.request(did)
      for (let i = 0; i < 40 && (fetched.length < 1 || r.isBusy(did)); i++) await sleep(10)
      clock.shift = shift
      r.request(did)
      await sleep(300)
      const limited = await counted(metrics.resyncsTotal, { outcome: 'rate_limited' })
      await r.close()
      expect(fetched.length).toBe(way === 'back' ? 2 : 1)
      expect(limited).toBe(way === 'back' ? 0 : 1)
    })

    it(`a silent socket is cut as idle after its timeout, not ${way === 'back' ? 'never' : 'at once'} (${way})`, async () => {
      const clock = steppableClock()
      const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' })
      await new Promise((r) => wss.once('listening', r))
      const stop = new AbortController()
      let markOpen = () => {}
      const opened = new Promise<void>((r) => {
        markOpen = r
      })
      const session = new WsSession({
        url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`,
        signal: stop.signal,
        heartbeatMs: 100,
        idleTimeoutMs: 1_000,
        accept: (d) => d,
        onOpen: () => markOpen(),
      })
      await opened
      const t = performance.now()
      clock.shift = shift
      const end = await within<SessionEnd, null>(session.ended, 4_000, null)
      const ms = performance.now() - t
      stop.abort()
      for (const c of wss.clients) c.terminate()
      await new Promise((r) => wss.close(r))
      expect(end).toMatchObject({ kind: 'stopped', reason: 'idle' })
      expect(ms).toBeGreaterThanOrEqual(800)
    })

    it(`a client at its HTTP rate limit waits a minute at most (${way})`, async () => {
      const clock = steppableClock()
      const app = await makeApp(db, { RATE_LIMIT_PER_MINUTE: '2' })
      try {
        const hit = () => app.inject({ method: 'GET', url: '/v1/stats' })
        expect((await hit()).statusCode).toBe(200)
        expect((await hit()).statusCode).toBe(200)
        expect((await hit()).statusCode).toBe(429)
        clock.shift = shift
        // Forward: the minute has not passed. Back: the minute is not eleven.
        const res = await hit()
        expect(res.statusCode).toBe(429)
        expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(60)
      } finally {
        await app.close()
      }
    })
  }

  it('the answer cache stops vouching 750 ms after the last poll, when the clock is set back', async () => {
    const clock = steppableClock()
    const cache = new AnswerCache({ maxBytes: 1 << 20, ttlMs: 60_000 })
    const tail = new ChangeTail(db, silentLogger())
    tail.add(new AnswerCacheKeeper(cache))
    // One poll and no more: the database stopped answering, as far as the cache knows.
    await tail.poll()
    cache.set('k', 'answer', ['did:plc:a'], cache.generation)
    expect(cache.get('k')?.payload.toString()).toBe('answer')
    clock.shift = -TEN_MINUTES
    await sleep(CACHE_TRUST_MS + 100)
    expect(cache.get('k'), 'a stale answer served past the trust bound').toBeUndefined()
    tail.close()
  })

  it('a background count runs again after its interval when the clock is set back', async () => {
    const clock = steppableClock()
    let counts = 0
    const read = backgroundCount(async () => ({ n: ++counts }), {
      logger: silentLogger(),
      what: 'things',
      minIntervalMs: 100,
    })
    await read()
    await sleep(20)
    clock.shift = -TEN_MINUTES
    await sleep(150)
    await read()
    expect(counts).toBe(2)
  })

  it('backfill progress keeps logging when the clock is set back', async () => {
    const clock = steppableClock()
    const { logger, logs } = captureLogger()
    const stream = { isTTY: false } as NodeJS.WriteStream
    const reporter = createProgressReporter({ logger, stream, logIntervalMs: 100 })
    const p = {
      listed: 1,
      listingDone: true,
      done: 0,
      skipped: 0,
      failed: 0,
      records: 0,
      elapsedMs: 0,
    }
    await sleep(150)
    clock.shift = -TEN_MINUTES
    reporter.update(p)
    expect(logs.filter((l) => l.msg === 'backfill progress')).toHaveLength(1)
  })

  it('a read timeout keeps the database slow for its minute when the clock jumps forward', () => {
    const clock = steppableClock()
    const metrics = testMetrics()
    metrics.store.noteStatementTimeout()
    clock.shift = TEN_MINUTES
    expect(metrics.store.slowness()).toMatchObject({ recentTimeouts: 1 })
  })
})
