import { afterEach, describe, expect, it } from 'vitest'
import { WebSocket } from 'ws'
import { type JetstreamServer, startJetstreamServer } from '../../demo-network/jetstream-server.ts'
import { AGENT, PROMPT, until } from '../helpers/ingest-kit.ts'
import { account, commit, T0 } from '../helpers/jetstream-json.ts'

const us = (n: number) => T0 + n * 1000
let s: JetstreamServer
afterEach(() => s?.close())

function subscribe(query: string) {
  const got: Array<{ time_us: number; kind: string }> = []
  const ws = new WebSocket(`${s.url}${query}`)
  ws.on('message', (d) => got.push(JSON.parse(d.toString())))
  return { got, ws, opened: new Promise((r) => ws.once('open', r)) }
}

describe('jetstream test server', () => {
  it('replays from the cursor, filters collections, then streams live', async () => {
    s = await startJetstreamServer({
      events: [
        commit(1),
        commit(2, { collection: AGENT }),
        account(3),
        commit(4, { collection: 'a.b.c' }),
      ],
    })
    const c = subscribe(`?wantedCollections=${PROMPT}&wantedCollections=a.b.*&cursor=${us(2)}`)
    await until(() => c.got.length === 2)
    expect(c.got.map((e) => e.time_us)).toEqual([us(3), us(4)])
    s.append([commit(5), commit(6, { collection: AGENT })])
    await until(() => c.got.length === 3)
    expect(c.got[2].time_us).toBe(us(5))
    expect(s.requests).toEqual([{ cursor: us(2), wantedCollections: [PROMPT, 'a.b.*'] }])
    c.ws.close()
  })

  it('starts at the live tip without a cursor and drops connections on demand', async () => {
    s = await startJetstreamServer({ events: [commit(1)] })
    const c = subscribe('')
    await c.opened
    s.append([commit(2)])
    await until(() => c.got.length === 1)
    expect(c.got[0].time_us).toBe(us(2))
    const closed = new Promise((r) => c.ws.once('close', r))
    s.dropConnections()
    await closed
    await until(() => s.connections === 0)
  })

  it('rate-limits when asked', async () => {
    s = await startJetstreamServer({
      events: Array.from({ length: 30 }, (_, i) => commit(i)),
      eventsPerSecond: 100,
    })
    const c = subscribe(`?cursor=${us(0)}`)
    const t = performance.now()
    await until(() => c.got.length === 30)
    expect(performance.now() - t).toBeGreaterThan(200)
    c.ws.close()
  })
  it('bounds its log by characters as well as by count, keeping the newest', async () => {
    const big = (n: number) => ({ ...commit(n), pad: 'x'.repeat(10_000) })
    s = await startJetstreamServer({ maxLogEvents: 1000, maxLogBytes: 50_000 })
    for (let n = 1; n <= 40; n++) s.append([big(n)])
    // Trimmed in chunks: never more than the bound and its eighth of slack.
    expect(s.logChars).toBeLessThanOrEqual(50_000 + (50_000 >> 3))
    expect(s.size).toBeGreaterThanOrEqual(4)
    expect(s.size).toBeLessThan(10)
    // A cursor before the window starts at its oldest event, which is one of the newest.
    const c = subscribe(`?cursor=${us(1)}`)
    await until(() => c.got.length === s.size)
    expect(c.got.at(-1)?.time_us).toBe(us(40))
    expect(c.got[0].time_us).toBe(us(41 - s.size))
    c.ws.close()
  })

  it('keeps the newest event even when it alone is over the character bound', async () => {
    s = await startJetstreamServer({ maxLogBytes: 100 })
    s.append([
      { ...commit(1), pad: 'y'.repeat(500) },
      { ...commit(2), pad: 'y'.repeat(500) },
    ])
    expect(s.size).toBe(1)
  })
})
