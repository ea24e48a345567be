import type { Page, WebSocketRoute } from 'playwright-core'
import { describe, expect, it } from 'vitest'
import { buildApp } from '../../src/api/app.ts'
import { makeApp } from '../api/fixtures.ts'
import { type BrowserApp, useBrowserApp } from '../helpers/browser.ts'
import { testContext } from '../helpers/context.ts'
import { apply, NSIDS, World } from '../helpers/events.ts'
import { indexDemoTraffic } from './fixtures.ts'

declare const window: { marker?: number }

// The live overview in headless Chromium: it follows the change subscription and shows a
// change the test makes without a reload; refused WebSockets make it refresh on a timer; a
// cut, a ConsumerTooSlow close and a server restart make it reconnect from the last seq it
// has, with every number still what the API counts.

const DID = 'did:plc:livelivelivelivelivelive'

// The restart test puts the restarted app in rig.app, for the hooks to close.
let rig: BrowserApp
const world = new World()

useBrowserApp(
  (deps) => indexDemoTraffic(deps, 400),
  (x) => {
    rig = x
  },
)

/** A new agent and a prompt naming it: two changes the overview must show. */
async function makeChange(name: string): Promise<string> {
  const agentRkey = world.tid()
  const rkey = world.tid()
  await apply(rig.deps, [
    world.commit({
      did: DID,
      collection: NSIDS.agent,
      rkey: agentRkey,
      record: { $type: NSIDS.agent, name, system: 'template v1' },
    }),
    world.prompt({ did: DID, rkey, fields: { agent: `at://${DID}/${NSIDS.agent}/${agentRkey}` } }),
  ])
  return rkey
}

const stats = async () => JSON.parse((await rig.app.inject('/v1/stats')).body)
const shownTotal = (p: Page) =>
  p.locator('table.counts tr', { hasText: 'all prompts' }).locator('td').textContent()
const liveState = (p: Page) => p.locator('#live-status').getAttribute('data-state')
const pageSeq = async (p: Page) => Number(await p.locator('#live').getAttribute('data-seq'))

/** The overview agrees with the API: its total and each recent change shown once. */
async function expectConsistent(p: Page): Promise<void> {
  await expect.poll(() => shownTotal(p), { timeout: 20_000 }).toBe(String((await stats()).prompts))
  const seqs = await p.locator('table.changes tbody tr td:first-child').allTextContents()
  expect(new Set(seqs).size).toBe(seqs.length)
  const sorted = [...seqs].map(Number).sort((x, y) => y - x)
  expect(seqs.map(Number)).toEqual(sorted)
}

describe('the live overview', () => {
  it('shows a change the test makes without a reload', async () => {
    // The file's page, fresh yet: closed at the end like the other tests' own.
    const p = rig.page
    await p.goto('/')
    await expect.poll(() => liveState(p)).toBe('live')
    await p.evaluate(() => {
      window.marker = 1
    })
    const before = Number(await shownTotal(p))
    await makeChange('live helper one')
    await expect.poll(() => shownTotal(p), { timeout: 15_000 }).toBe(String(before + 1))
    await expect(p.locator('table.changes').textContent()).resolves.toContain('live helper one')
    // The same document: it was updated in place, not reloaded.
    await expect(p.evaluate(() => window.marker)).resolves.toBe(1)
    await expectConsistent(p)
    await p.context().close()
  })

  it('refreshes on a timer when WebSockets are refused', async () => {
    const refusing = await buildApp(testContext(rig.db, { RATE_LIMIT_PER_MINUTE: '1000000' }), {
      ingest: null,
      isReady: () => true,
      subscribe: { maxSubscribers: 0 },
    })
    const base = await refusing.listen({ host: '127.0.0.1', port: 0 })
    try {
      const p = await rig.b.newPage()
      // The page's timers run on a clock the test can move on: the poll it announces comes
      // when the test skips that far ahead, not after as long a real wait.
      await p.clock.install()
      await p.goto(`${base}/`)
      await expect.poll(() => liveState(p)).toBe('polling')
      const status = (await p.locator('#live-status').textContent()) ?? ''
      expect(status).toContain('WebSocket refused')
      const every = Number(/refreshing every (\d+) s/.exec(status)?.[1])
      expect(every).toBeGreaterThan(0)
      const before = Number(await shownTotal(p))
      await makeChange('polled helper')
      await p.clock.fastForward(every * 1000)
      await expect.poll(() => shownTotal(p), { timeout: 25_000 }).toBe(String(before + 1))
      await expectConsistent(p)
      await p.context().close()
    } finally {
      await refusing.close()
    }
  }, 60_000)

  it('reconnects from its last seq after a cut and a ConsumerTooSlow close', async () => {
    const p = await rig.b.newPage()
    const sinces: number[] = []
    let current: WebSocketRoute | null = null
    await p.routeWebSocket(/\/v1\/changes\/subscribe/, (ws) => {
      sinces.push(Number(new URL(ws.url()).searchParams.get('since')))
      current = ws
      ws.connectToServer()
    })
    await p.goto('/')
    await expect.poll(() => liveState(p)).toBe('live')
    await makeChange('before the cut')
    await expect
      .poll(() => p.locator('table.changes').textContent(), { timeout: 15_000 })
      .toContain('before the cut')
    // A cut: the page goes on from the seq it has, and shows what happened meanwhile.
    const seen = await pageSeq(p)
    await current!.close({ code: 1011, reason: 'cut by the test' })
    await makeChange('during the cut')
    await expect.poll(() => sinces.length, { timeout: 15_000 }).toBe(2)
    expect(sinces[1]).toBeGreaterThanOrEqual(seen)
    await expect.poll(() => liveState(p)).toBe('live')
    await expect
      .poll(() => p.locator('table.changes').textContent(), { timeout: 15_000 })
      .toContain('during the cut')
    await expectConsistent(p)
    // What the server does to a subscriber that falls behind: a reason frame, then 1008.
    const seenBefore = await pageSeq(p)
    current!.send(JSON.stringify({ error: 'ConsumerTooSlow', message: 'too slow' }))
    await current!.close({ code: 1008, reason: 'too slow' })
    await expect.poll(() => sinces.length, { timeout: 15_000 }).toBe(3)
    expect(sinces[2]).toBe(seenBefore)
    await makeChange('after too slow')
    await expect
      .poll(() => p.locator('table.changes').textContent(), { timeout: 15_000 })
      .toContain('after too slow')
    await expectConsistent(p)
    await p.context().close()
  }, 90_000)

  it('survives the server restarting', async () => {
    const p = await rig.b.newPage()
    await p.goto('/')
    await expect.poll(() => liveState(p)).toBe('live')
    const port = Number(new URL(rig.b.base).port)
    await rig.app.close()
    await expect.poll(() => liveState(p), { timeout: 15_000 }).not.toBe('live')
    await makeChange('while restarting')
    rig.app = await makeApp(rig.db)
    await rig.app.listen({ host: '127.0.0.1', port })
    await expect.poll(() => liveState(p), { timeout: 30_000 }).toBe('live')
    await expect
      .poll(() => p.locator('table.changes').textContent(), { timeout: 15_000 })
      .toContain('while restarting')
    await makeChange('after the restart')
    await expect
      .poll(() => p.locator('table.changes').textContent(), { timeout: 15_000 })
      .toContain('after the restart')
    await expectConsistent(p)
    await p.context().close()
  }, 90_000)
})
