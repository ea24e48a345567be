import type { AddressInfo } from 'node:net'
import { afterAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { buildApp } from '../../src/api/app.ts'
import { TAIL_DEFAULTS } from '../../src/api/changes/tail.ts'
import type { Database } from '../../src/db/client.ts'
import { testContext } from '../helpers/context.ts'
import { createTestDatabase } from '../helpers/db.ts'
import { apply } from '../helpers/events.ts'
import { ALICE, BOB, seed } from './fixtures.ts'

// One reader of the change log per process: with the answer cache active and live
// subscribers connected, the log is read once per tick, by one poll that feeds both.

/** `base` with every statement on its monitor connection (where the log is polled) counted. */
function countingMonitor(base: Database): { db: Database; reads: () => number } {
  let reads = 0
  const monitor = new Proxy(base.monitor, {
    get(target, prop, receiver) {
      if (prop === 'select' || prop === 'execute') reads++
      return Reflect.get(target, prop, receiver)
    },
  })
  return { db: { ...base, monitor } as Database, reads: () => reads }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

async function until(what: string, ok: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(10)
  }
}

describe('the change tail', () => {
  const closers: Array<() => Promise<unknown>> = []
  afterAll(async () => {
    for (const close of closers.reverse()) await close()
  })

  it('reads the log once per tick for the answer cache and every subscriber together', async () => {
    const base = await createTestDatabase()
    closers.push(() => base.close())
    const s = await seed(base)
    const { db, reads } = countingMonitor(base)
    const ctx = testContext(db, { RATE_LIMIT_PER_MINUTE: '1000000' })
    const app = await buildApp(ctx, { ingest: null, isReady: () => true })
    closers.push(() => app.close())
    await app.listen({ host: '127.0.0.1', port: 0 })
    const { port } = app.server.address() as AddressInfo

    // The cache in use, and subscribers live: each read its backlog, then one more change.
    expect((await app.inject(`/v1/prompts/${ALICE}/${s.alice.ok}`)).statusCode).toBe(200)
    const got = [0, 1, 2].map(() => [] as string[])
    const peers = got.map((frames) => {
      const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/changes/subscribe?since=0`)
      ws.on('message', (data) => frames.push(String(data)))
      return ws
    })
    await Promise.all(peers.map((ws) => new Promise((r) => ws.once('open', r))))
    const commit = async () => {
      const rkey = s.w.tid()
      await apply(s.deps, [s.w.prompt({ did: BOB, rkey })])
      await until('the change on every subscriber', () =>
        got.every((frames) => frames.some((f) => f.includes(rkey))),
      )
    }
    await commit()
    await sleep(500)

    // A quiet interval: only the timer's polls read the log.
    const before = reads()
    const t0 = Date.now()
    await sleep(3_000)
    const n = reads() - before
    const ticks = (Date.now() - t0) / TAIL_DEFAULTS.pollMs
    expect(n).toBeGreaterThan(0)
    // One read per tick (a page short of full ends the poll); two pollers would read twice.
    expect(n).toBeLessThanOrEqual(Math.ceil(ticks) + 1)

    // And the live subscribers are still fed by it.
    await commit()
    for (const ws of peers) ws.close()
  }, 60_000)
})
