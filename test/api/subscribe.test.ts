import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { buildApp } from '../../src/api/app.ts'
import type { SubscribeOptions } from '../../src/api/changes/hub.ts'
import type { Database } from '../../src/db/client.ts'
import { testContext } from '../helpers/context.ts'
import { createTestDatabase } from '../helpers/db.ts'
import { apply, NSIDS } from '../helpers/events.ts'
import { LETTA_ANATOMY, lettaRecompiles } from '../helpers/letta-recompiles.ts'
import { ALICE, BOB, isErrorShape, promptUri, type Seeded, seed } from './fixtures.ts'

// GET /v1/changes/subscribe over real sockets, with the `ws` client: the backlog and the
// live changes equal the NDJSON feed, slow and rude subscribers are cut with a reason and
// resume by seq, bad requests are refused before the upgrade, and the app's close closes
// every subscriber. On PGlite, and on Postgres with TEST_DATABASE_URL.

interface Line {
  seq: number
  op: string
  uri: string
  cid: string | null
  changed?: string[] | null
  record?: unknown
  superseded?: boolean
}

let db: Database
let s: Seeded
const apps: FastifyInstance[] = []

async function serve(subscribe: Partial<SubscribeOptions> = {}) {
  const ctx = testContext(db, { RATE_LIMIT_PER_MINUTE: '1000000' })
  const app = await buildApp(ctx, { ingest: null, isReady: () => true, subscribe })
  apps.push(app)
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as AddressInfo
  return { app, base: `127.0.0.1:${port}` }
}

beforeAll(async () => {
  db = await createTestDatabase()
  s = await seed(db)
})
afterAll(async () => {
  for (const app of apps) await app.close()
  await db?.close()
})

/** One subscriber: every frame it got, and how it ended. */
class Peer {
  readonly frames: Array<Record<string, unknown>> = []
  readonly ws: WebSocket
  closed: { code: number; reason: string } | null = null
  readonly opened: Promise<void>
  readonly ended: Promise<{ code: number; reason: string }>
  constructor(base: string, query: string) {
    this.ws = new WebSocket(`ws://${base}/v1/changes/subscribe${query}`)
    this.ws.on('message', (data) => this.frames.push(JSON.parse(String(data))))
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('open', () => resolve())
      this.ws.once('error', reject)
      this.ws.once('unexpected-response', (_req, res) =>
        reject(new Error(`answered ${res.statusCode}`)),
      )
    })
    this.ended = new Promise((resolve) =>
      this.ws.once('close', (code, reason) => {
        this.closed = { code, reason: String(reason) }
        resolve(this.closed)
      }),
    )
    this.ended.catch(() => {})
    this.opened.catch(() => {})
  }
  get lines(): Line[] {
    return this.frames.filter((f) => !('error' in f)) as unknown as Line[]
  }
  get lastSeq(): number {
    return this.lines.at(-1)?.seq ?? 0
  }
}

/** The whole feed after `since`, as /v1/changes serves it. */
async function feed(app: FastifyInstance, since = 0, include = ''): Promise<Line[]> {
  const out: Line[] = []
  let last = since
  for (;;) {
    const res = await app.inject({
      url: `/v1/changes?since=${last}&limit=10000${include ? `&include=${include}` : ''}`,
    })
    expect(res.statusCode).toBe(200)
    const page = res.body
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Line)
    if (page.length === 0) return out
    out.push(...page)
    last = page[page.length - 1].seq
  }
}

async function until(what: string, ok: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

/** New prompts of bob's, committed `perBatch` to a transaction. */
async function commitPrompts(n: number, perBatch = 1, contentBytes = 0): Promise<string[]> {
  const rkeys: string[] = []
  for (let i = 0; i < n; i += perBatch) {
    const events = []
    for (let j = i; j < Math.min(n, i + perBatch); j++) {
      const rkey = s.w.tid()
      rkeys.push(rkey)
      const fields =
        contentBytes > 0 ? { content: `You are an agent. ${'x'.repeat(contentBytes)}` } : {}
      events.push(s.w.prompt({ did: BOB, rkey, fields }))
    }
    await apply(s.deps, events)
  }
  return rkeys
}

/** The HTTP answer to an upgrade that was refused. */
function refused(
  base: string,
  query: string,
): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://${base}/v1/changes/subscribe${query}`)
    ws.once('open', () => {
      ws.close()
      reject(new Error(`${query} was upgraded`))
    })
    ws.once('error', () => {})
    ws.once('unexpected-response', (_req, res) => {
      let body = ''
      res.on('data', (d) => {
        body += d
      })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }))
    })
  })
}

describe('GET /v1/changes/subscribe', () => {
  it('the backlog, then each change as it commits, in seq order, equal to /v1/changes', async () => {
    const { app, base } = await serve()
    const before = await feed(app)
    expect(before.length).toBeGreaterThan(30)
    const head = before.at(-1)!.seq
    const mid = before[9].seq
    const all = new Peer(base, '?since=0')
    const late = new Peer(base, `?since=${mid}`)
    // Ahead of the head: it waits for the seqs to pass it.
    const ahead = new Peer(base, `?since=${head + 3}`)
    await Promise.all([all.opened, late.opened, ahead.opened])
    await until('the backlog', () => all.lastSeq === head && late.lastSeq === head)
    // The seeded feed skips carol's upserts (taken down): so does the subscription.
    expect(all.lines).toEqual(before)
    expect(late.lines).toEqual(before.slice(10))

    // Live: single commits, a batch of several, an update and a delete.
    const rkeys = await commitPrompts(3)
    await commitPrompts(5, 5)
    await apply(s.deps, [
      s.w.prompt({ did: BOB, rkey: rkeys[0], op: 'update', fields: { note: 'again' } }),
    ])
    await apply(s.deps, [s.w.prompt({ did: BOB, rkey: rkeys[1], op: 'delete' })])
    const after = await feed(app)
    const last = after.at(-1)!.seq
    expect(after.length).toBe(before.length + 10)
    await until(
      'the live changes',
      () => all.lastSeq === last && late.lastSeq === last && ahead.lastSeq === last,
    )
    expect(all.lines).toEqual(after)
    expect(late.lines).toEqual(after.slice(10))
    expect(ahead.lines).toEqual(after.filter((l) => l.seq > head + 3))
    expect(ahead.lines.length).toBeGreaterThan(0)
    for (const p of [all, late, ahead]) expect(p.closed).toBeNull()
    for (const p of [all, late, ahead]) p.ws.close()
  })

  it("live prompt upserts carry the recompile anatomy, as the feed's lines do", async () => {
    const { app, base } = await serve()
    const head = (await feed(app)).at(-1)!.seq
    const peer = new Peer(base, `?since=${head}`)
    await peer.opened
    const rkey = s.w.tid()
    await lettaRecompiles(s.deps, s.w, ALICE, rkey)
    const mine = () => peer.lines.filter((l) => l.uri === promptUri(ALICE, rkey))
    await until('the four versions', () => mine().length === 4)
    expect(mine().map((l) => l.changed)).toEqual(LETTA_ANATOMY.map((a) => a.changed))
    expect(peer.lines).toEqual(await feed(app, head))
    peer.ws.close()
  })

  it('include=record: the feed lines with their records', async () => {
    const { app, base } = await serve()
    const peer = new Peer(base, '?since=0&include=record')
    await peer.opened
    const before = await feed(app, 0, 'record')
    await until('the backlog', () => peer.lastSeq === before.at(-1)!.seq)
    // New prompts and a conversation, none superseded while the test runs.
    await commitPrompts(4, 2, 2000)
    await apply(s.deps, [
      s.w.conversation({
        did: ALICE,
        rkey: s.w.tid(),
        record: { $type: NSIDS.conversation, title: 'live' },
      }),
    ])
    const after = await feed(app, 0, 'record')
    await until('the live changes', () => peer.lastSeq === after.at(-1)!.seq)
    expect(peer.lines).toEqual(after)
    const live = peer.lines.slice(before.length)
    expect(live.length).toBe(5)
    for (const l of live) expect(l.record).toBeTruthy()
    // The seeded recompiles' older versions come whole, from the revision history.
    const recompiled = peer.lines.filter((l) => l.uri.endsWith(`/${s.alice.recompiled}`))
    expect(recompiled.length).toBeGreaterThanOrEqual(3)
    for (const l of recompiled) expect(l.record && !l.superseded).toBe(true)
    peer.ws.close()
  })

  it('a subscriber that stops reading is cut with ConsumerTooSlow and resumes with nothing lost', async () => {
    const { app, base } = await serve({ maxUnsentBytes: 256 * 1024 })
    const start = (await feed(app)).at(-1)!.seq
    const slow = new Peer(base, `?since=${start}&include=record`)
    const fast = new Peer(base, `?since=${start}&include=record`)
    await Promise.all([slow.opened, fast.opened])
    // It stops reading: its socket's buffers fill, then the server's log for it.
    slow.ws.pause()
    const server = () => [...app.websocketServer.clients]
    await until('both live', () => server().length === 2)
    // Large changes, in many commits: MBs past what the kernel's buffers take.
    let committed = 0
    while (server().every((ws) => ws.readyState === WebSocket.OPEN)) {
      await commitPrompts(10, 10, 32 * 1024)
      committed += 10
      // The client shares this process: let it read (PGlite's awaits never yield to I/O).
      await new Promise((r) => setTimeout(r, 50))
      if (committed > 2000) throw new Error('never cut')
    }
    const head = (await feed(app)).at(-1)!.seq
    await until('the fast one to be current', () => fast.lastSeq === head, 30_000)
    expect(fast.closed).toBeNull()
    // The slow one reads again: the frames it was sent, the reason, the close.
    slow.ws.resume()
    const end = await slow.ended
    expect(end.code).toBe(1008)
    const reason = slow.frames.at(-1) as { error: string; message: string }
    expect(reason.error).toBe('ConsumerTooSlow')
    expect(reason.message).toMatch(new RegExp(`since=${slow.lastSeq}\\b`))
    expect(slow.lastSeq).toBeLessThan(head)
    // Resumes from the last seq it got, and ends with the whole feed.
    const again = new Peer(base, `?since=${slow.lastSeq}&include=record`)
    await again.opened
    await until('the resumed one to be current', () => again.lastSeq === head, 30_000)
    const seqs = [...slow.lines, ...again.lines].map((l) => l.seq)
    expect(seqs).toEqual((await feed(app, start)).map((l) => l.seq))
    expect(fast.lines.map((l) => l.seq)).toEqual(seqs)
    fast.ws.close()
    again.ws.close()
    console.log(
      `slow subscriber cut after ${committed} large prompts, at seq ${slow.lastSeq} of ${head}`,
    )
  }, 120_000)

  it('refuses hostile since and include with a 400 before the upgrade; a plain GET is a 426', async () => {
    const { app, base } = await serve()
    for (const q of [
      '?since=-1',
      '?since=abc',
      '?since=1e2',
      '?since=0x10',
      '?since=99999999999999999999',
      '?since=',
      '?include=records',
      '?include=',
      '?include=record&include=record',
      '?since=1&since=2',
    ]) {
      const res = await refused(base, q)
      expect(res.status, q).toBe(400)
      const body = JSON.parse(res.body)
      expect(isErrorShape(body), q).toBe(true)
      expect(body.error).toBe('InvalidRequest')
      expect(body.message, q).toMatch(/since|include/)
    }
    const plain = await app.inject({ url: '/v1/changes/subscribe?since=0' })
    expect(plain.statusCode).toBe(426)
    expect(plain.headers.upgrade).toBe('websocket')
    expect(isErrorShape(plain.json())).toBe(true)
    const bad = await app.inject({ url: '/v1/changes/subscribe?since=x' })
    expect(bad.statusCode).toBe(400)
    expect(isErrorShape(bad.json())).toBe(true)
    // Documented with its parameters, beside the feed.
    const doc = (await app.inject({ url: '/openapi.json' })).json()
    const op = doc.paths['/v1/changes/subscribe'].get
    expect(op.parameters.map((p: { name: string }) => p.name).sort()).toEqual(['include', 'since'])
    expect(Object.keys(op.responses)).toContain('101')
  })

  it('a subscriber that sends anything is closed with a reason; the others go on', async () => {
    const { base } = await serve()
    const rude = new Peer(base, '?since=0')
    const calm = new Peer(base, '?since=0')
    await Promise.all([rude.opened, calm.opened])
    rude.ws.send('hello')
    const end = await rude.ended
    expect(end.code).toBe(1008)
    expect(rude.frames.at(-1)).toMatchObject({ error: 'InvalidRequest' })
    const [rkey] = await commitPrompts(1)
    await until('the change', () => calm.lines.some((l) => l.uri.endsWith(rkey)))
    expect(calm.closed).toBeNull()
    calm.ws.close()
  })

  it('past the subscriber bound a subscription is a 503 before the upgrade', async () => {
    const { base } = await serve({ maxSubscribers: 2 })
    const a = new Peer(base, '?since=0')
    const b = new Peer(base, '?since=0')
    await Promise.all([a.opened, b.opened])
    const res = await refused(base, '?since=0')
    expect(res.status).toBe(503)
    expect(res.headers['retry-after']).toBe('5')
    expect(JSON.parse(res.body)).toMatchObject({ error: 'ServiceUnavailable' })
    expect(isErrorShape(JSON.parse(res.body))).toBe(true)
    // A place freed is a place again.
    a.ws.close()
    await a.ended
    const c = new Peer(base, '?since=0')
    await c.opened
    b.ws.close()
    c.ws.close()
  })

  it('closing the app closes its subscribers with 1001, also one that stopped reading', async () => {
    const { app, base } = await serve()
    const reading = new Peer(base, '?since=0')
    const stalled = new Peer(base, '?since=0')
    await Promise.all([reading.opened, stalled.opened])
    stalled.ws.pause()
    const t0 = Date.now()
    await app.close()
    const ms = Date.now() - t0
    expect(ms).toBeLessThan(5_000)
    expect((await reading.ended).code).toBe(1001)
    stalled.ws.resume()
    // It never answered the close in time: cut (1006) or, if it did, 1001.
    expect([1001, 1006]).toContain((await stalled.ended).code)
    // No new subscriptions on a closed app.
    await expect(new Peer(base, '?since=0').opened).rejects.toThrow()
  })
})
