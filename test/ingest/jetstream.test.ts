import { createServer, type Server, type Socket } from 'node:net'
import { describe, expect, it } from 'vitest'
import { WebSocketServer } from 'ws'
import { type JetstreamServer, startJetstreamServer } from '../../demo-network/jetstream-server.ts'
import { backoffMs } from '../../src/faults/backoff.ts'
import {
  buildSubscribeUrl,
  createJetstreamSource,
  type JetstreamOptions,
  type JetstreamSourceOptions,
  jetstreamConnection,
} from '../../src/ingest/jetstream/v1.ts'
import { timeCursor } from '../../src/model/cursor.ts'
import type { SourceItem } from '../../src/model/events.ts'
import {
  COLLECTIONS,
  captureLogger,
  counterValue,
  testMetrics,
  until,
} from '../helpers/ingest-kit.ts'
import { account, commit, DID, identity, T0 } from '../helpers/jetstream-json.ts'
import { onCleanup, sourceRun } from '../helpers/source-run.ts'

const us = (n: number) => T0 + n * 1000
const WANTED = ['xyz.quasigod.lab.letta.*']
/** The items' time_us cursors (a cursor of another kind shows as itself, and fails the match). */
const times = (items: SourceItem[]) =>
  items.map((i) => (i.cursor?.kind === 'time_us' ? i.cursor.value : i.cursor))

function setup(url: string, o: Partial<JetstreamSourceOptions> = {}) {
  const metrics = testMetrics()
  const { logger, logs } = captureLogger()
  const source = createJetstreamSource({
    url,
    wantedCollections: WANTED,
    collections: COLLECTIONS,
    rewindSeconds: 1,
    logger,
    metrics,
    backoffBaseMs: 10,
    backoffMaxMs: 50,
    connectTimeoutMs: 200,
    ...o,
  })
  const { sink, ac, start } = sourceRun(source)
  return { metrics, logs, source, sink, ac, start }
}

async function server(events = [] as Parameters<JetstreamServer['append']>[0]) {
  const s = await startJetstreamServer({ events })
  onCleanup(() => s.close())
  return s
}

describe('jetstream helpers', () => {
  it('builds subscribe URLs', () => {
    expect(buildSubscribeUrl('ws://h/subscribe?cursor=1', ['a.b.*', 'c.d.e'], 42)).toBe(
      'ws://h/subscribe?wantedCollections=a.b.*&wantedCollections=c.d.e&cursor=42',
    )
    expect(buildSubscribeUrl('wss://h/subscribe', ['a.*'], null)).toBe(
      'wss://h/subscribe?wantedCollections=a.*',
    )
  })

  it('backs off exponentially up to a cap, with full jitter', () => {
    const backoff = (random: () => number) =>
      jetstreamConnection({ backoffBaseMs: 100, backoffMaxMs: 1000, random } as JetstreamOptions)
        .backoff
    // runWire waits backoffMs(attempt - 1) before reconnect number `attempt` (from 1).
    const delay = (attempt: number, random: () => number) => backoffMs(attempt - 1, backoff(random))
    expect([1, 2, 3, 10, 100].map((a) => delay(a, () => 0.999))).toEqual([99, 199, 399, 999, 999])
    expect(delay(5, () => 0)).toBe(0)
  })
})

describe('jetstream source', () => {
  it('replays from the rewound cursor, filters, skips bad frames and verifies handles', async () => {
    const s = await server([
      commit(1),
      account(2),
      identity(3),
      commit(4, { collection: 'app.bsky.feed.post' }),
      'not json',
      { ...commit(6), did: 'did:bad' },
      commit(7, { operation: 'delete' }),
    ])
    const verifyHandle = async (did: string, h: string | null) =>
      did === DID && h === 'ada.example.com' ? h : null
    const { sink, start, metrics, source } = setup(s.url, { verifyHandle })
    start(timeCursor(us(1) + 1_000_000))
    await sink.waitFor(4)
    expect(s.requests[0]).toEqual({ cursor: us(1), wantedCollections: WANTED })
    expect(sink.items.map((i) => [i.timeUs, i.event?.kind ?? null])).toEqual([
      [us(1), 'commit'],
      [us(2), 'account'],
      [us(3), 'identity'],
      // app.bsky.feed.post is not even sent: the server honours wantedCollections. The bad
      // DID at us(6) is counted but not pushed: a line whose DID cannot be read moves no cursor.
      [us(7), 'commit'],
    ])
    // The rewound events were applied before: the cursor stays where it was.
    expect(new Set(times(sink.items))).toEqual(new Set([us(1) + 1_000_000]))
    expect(sink.items[2].event).toMatchObject({ kind: 'identity', handle: 'ada.example.com' })
    expect(await counterValue(metrics, { source: 'jetstream', outcome: 'error' })).toBe(2)
    expect(await counterValue(metrics, { source: 'jetstream' }, 'resumeGapsTotal')).toBe(0)
    expect(source.lastCursor).toEqual(timeCursor(us(1) + 1_000_000))
    s.append([commit(2000)])
    await until(() => source.lastCursor?.value === us(2000), 2000, 'the cursor to move')
    expect(sink.items.at(-1)?.cursor).toEqual(timeCursor(us(2000)))
  })

  it('starts at the live tip without a cursor; identity handles are null unverified', async () => {
    const s = await server([commit(1)])
    const { sink, start } = setup(s.url)
    start(null)
    await until(() => s.connections === 1)
    expect(s.requests[0].cursor).toBe(null)
    s.append([identity(2), commit(3)])
    await sink.waitFor(2)
    expect(times(sink.items)).toEqual([us(2), us(3)])
    expect(sink.items[0].event).toMatchObject({ kind: 'identity', handle: null })
  })

  it('reconnects after a drop and resumes from the newest cursor minus the rewind', async () => {
    const total = 400
    const s = await server(Array.from({ length: 300 }, (_, i) => commit(i)))
    // 10 ms of rewind = 10 events of 1 ms each may be seen twice, no more. The default 200 ms
    // connect timeout could cut the reconnect itself on a loaded machine (a second reconnect).
    const { sink, start, metrics, source } = setup(s.url, {
      rewindSeconds: 0.01,
      connectTimeoutMs: 10_000,
    })
    const slowPush = sink.push
    sink.push = async (item) => {
      await new Promise((r) => setTimeout(r, 0))
      return slowPush(item)
    }
    start(timeCursor(us(0)))
    await sink.waitFor(50)
    s.dropConnections()
    const before = source.lastCursor!.value
    await until(() => s.requests.length === 2, 2000, 'a reconnect')
    s.append(Array.from({ length: total - 300 }, (_, i) => commit(300 + i)))
    const seen = () => new Set(sink.items.map((i) => i.timeUs))
    await until(() => seen().size === total, 5000, 'every event')
    expect(await counterValue(metrics, { source: 'jetstream' }, 'sourceReconnectsTotal')).toBe(1)
    // Items pushed between the drop and the close may move the cursor a little further.
    expect(s.requests[1].cursor).toBeGreaterThanOrEqual(before - 10_000)
    expect(sink.items.length - total).toBeLessThanOrEqual(11)
    expect(s.requests[1].cursor).toBeLessThan(us(299)) // the drop really cut the replay short
    const cursors = sink.items.map((i) => i.cursor!.value)
    expect(cursors).toEqual([...cursors].sort((a, b) => a - b))
    expect(await counterValue(metrics, { source: 'jetstream' }, 'resumeGapsTotal')).toBe(0)
  })

  it('stops reading while the sink is full, so the server is held back', async () => {
    const big = 'x'.repeat(4096)
    const n = 10_000
    const s = await server(Array.from({ length: n }, (_, i) => commit(i, { record: { big } })))
    // A generous handshake timeout: on a loaded machine a 200 ms one can expire after the
    // server has begun sending, and the reconnect's resend would blur the count below.
    const { start, sink } = setup(s.url, { connectTimeoutMs: 10_000 })
    let release!: () => void
    const blocked = new Promise<void>((r) => {
      release = r
    })
    const push = sink.push
    sink.push = async (item) => {
      await blocked
      return push(item)
    }
    start(timeCursor(us(0)))
    await until(() => s.connections === 1)
    await new Promise((r) => setTimeout(r, 300))
    // 40 MB of events; socket buffers hold a few MB at most while the client is paused.
    expect(s.sent).toBeLessThan(n / 2)
    release()
    await sink.waitFor(n, 10_000)
    expect(s.sent).toBe(n)
  })

  it('times out a server that never answers the upgrade, and retries', async () => {
    const sockets: Socket[] = []
    const silent: Server = createServer((sock) => void sockets.push(sock))
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r))
    onCleanup(() => {
      for (const sock of sockets) sock.destroy()
      return new Promise((r) => silent.close(r))
    })
    const { port } = silent.address() as { port: number }
    const { start, metrics, logs } = setup(`ws://127.0.0.1:${port}/subscribe`, {
      connectTimeoutMs: 100,
    })
    start(null)
    await until(
      async () =>
        (await counterValue(metrics, { source: 'jetstream' }, 'sourceReconnectsTotal')) >= 2,
    )
    expect(sockets.length).toBeGreaterThanOrEqual(2)
    expect(logs.some((l) => /handshake has timed out/.test(String(l.reason)))).toBe(true)
  })

  it('cuts a connection that stops answering pings', async () => {
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 })
    await new Promise((r) => wss.once('listening', r))
    let accepted = 0
    wss.on('connection', (ws) => {
      accepted++
      // Stop reading: pings go unanswered, like a half-open TCP connection.
      ;(ws as unknown as { _socket: Socket })._socket.pause()
    })
    onCleanup(() => new Promise((r) => wss.close(r)))
    for (const c of wss.clients) c.terminate()
    const { port } = wss.address() as { port: number }
    const { start, logs } = setup(`ws://127.0.0.1:${port}/`, { heartbeatMs: 50 })
    start(null)
    await until(() => accepted >= 2, 3000, 'a second connection')
    expect(logs.some((l) => l.reason === 'heartbeat timeout')).toBe(true)
    onCleanup(() => {
      for (const c of wss.clients) c.terminate()
    })
  })

  it('counts a resume gap when the first event is far past the cursor', async () => {
    const hour = 3_600_000_000
    const s = await server([commit(1), { ...commit(2), time_us: us(2) + hour }])
    const { sink, start, metrics, logs } = setup(s.url)
    start(timeCursor(us(1) + hour - 10_000_000)) // the server no longer has what came after this
    await sink.waitFor(1)
    expect(await counterValue(metrics, { source: 'jetstream' }, 'resumeGapsTotal')).toBe(1)
    const err = logs.find((l) => l.level === 50)
    expect(String(err?.msg)).toContain('prompt-appview backfill')
  })

  it('fails instead of reconnecting when the sink fails', async () => {
    const s = await server([commit(1)])
    const { sink, start, metrics } = setup(s.url)
    sink.push = async () => {
      throw new Error('database is gone')
    }
    await expect(start(timeCursor(us(1)))).rejects.toThrow('database is gone')
    expect(await counterValue(metrics, { source: 'jetstream' }, 'sourceReconnectsTotal')).toBe(0)
  })

  it('stops promptly on abort while backing off', async () => {
    const { start, ac } = setup('ws://127.0.0.1:1/subscribe', {
      backoffBaseMs: 60_000,
      backoffMaxMs: 60_000,
      random: () => 1,
    })
    const done = start(null)
    await new Promise((r) => setTimeout(r, 100))
    const t = performance.now()
    ac.abort()
    await done
    expect(performance.now() - t).toBeLessThan(250)
  })
})
