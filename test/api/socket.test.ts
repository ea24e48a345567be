import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Database } from '../../src/db/client.ts'
import { createTestDatabase } from '../helpers/db.ts'
import { ALICE, makeApp, type Seeded, seed } from './fixtures.ts'

// Over a real socket: what `inject` cannot show (compression on the wire, streaming,
// client addresses behind a proxy).

let db: Database
let s: Seeded
const apps: FastifyInstance[] = []

async function serve(
  env: Record<string, string> = {},
  extra: { changesPageSize?: number } = {},
): Promise<string> {
  const app = await makeApp(db, env, extra)
  apps.push(app)
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as AddressInfo
  return `http://127.0.0.1:${port}`
}

beforeAll(async () => {
  db = await createTestDatabase()
  s = await seed(db)
})
afterAll(async () => {
  for (const app of apps) await app.close()
  await db?.close()
})

describe('over HTTP', () => {
  it('serves lookups and lists, compressed when asked', async () => {
    const base = await serve()
    const one = await fetch(`${base}/v1/prompts/${ALICE}/${s.alice.ok}`)
    expect(one.status).toBe(200)
    expect(((await one.json()) as { did: string }).did).toBe(ALICE)
    const list = await fetch(`${base}/v1/prompts?limit=100`, {
      headers: { 'accept-encoding': 'gzip' },
    })
    expect(list.status).toBe(200)
    expect(list.headers.get('content-encoding')).toBe('gzip')
    expect(list.headers.get('vary')).toMatch(/accept-encoding/i)
    expect(((await list.json()) as { items: unknown[] }).items.length).toBeGreaterThan(10)
    const br = await fetch(`${base}/v1/prompts?limit=100`, { headers: { 'accept-encoding': 'br' } })
    expect(br.headers.get('content-encoding')).toBe('br')
    expect(((await br.json()) as { items: unknown[] }).items.length).toBeGreaterThan(10)
  })

  it('conditional GET with the ETag', async () => {
    const base = await serve()
    const url = `${base}/v1/prompts/${ALICE}/${s.alice.recompiled}`
    const first = await fetch(url)
    const etag = first.headers.get('etag')!
    await first.arrayBuffer()
    const again = await fetch(url, { headers: { 'if-none-match': etag } })
    expect(again.status).toBe(304)
  })

  it('streams the change feed as NDJSON across chunks', async () => {
    const base = await serve({}, { changesPageSize: 4 })
    const res = await fetch(`${base}/v1/changes?limit=10000`, {
      headers: { 'accept-encoding': 'gzip' },
    })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^application\/x-ndjson/)
    const lines = (await res.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    expect(lines.length).toBeGreaterThan(30)
    const seqs = lines.map((l: { seq: number }) => l.seq)
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b))
  })

  it('answers CORS preflights for GET', async () => {
    const base = await serve()
    const res = await fetch(`${base}/v1/stats`, {
      method: 'OPTIONS',
      headers: { origin: 'https://example.com', 'access-control-request-method': 'GET' },
    })
    expect(res.status).toBeLessThan(300)
    expect(res.headers.get('access-control-allow-origin')).toBe('*')
    expect(res.headers.get('access-control-allow-methods')).not.toMatch(/POST/)
  })
})

describe('rate limit per client address', () => {
  const hit = (base: string, xff?: string) =>
    fetch(`${base}/v1/stats`, { headers: xff ? { 'x-forwarded-for': xff } : {} })

  it('behind a proxy (TRUST_PROXY) each forwarded client has its own budget', async () => {
    const base = await serve({ RATE_LIMIT_PER_MINUTE: '3', TRUST_PROXY: 'true' })
    for (let i = 0; i < 3; i++) expect((await hit(base, '203.0.113.5')).status).toBe(200)
    const limited = await hit(base, '203.0.113.5')
    expect(limited.status).toBe(429)
    expect(await limited.json()).toEqual({
      error: 'RateLimitExceeded',
      message: expect.any(String),
    })
    expect(limited.headers.get('retry-after')).toBeTruthy()
    expect((await hit(base, '203.0.113.6')).status).toBe(200)
    // Probes are exempt.
    for (let i = 0; i < 5; i++)
      expect(
        (await fetch(`${base}/healthz`, { headers: { 'x-forwarded-for': '203.0.113.5' } })).status,
      ).toBe(200)
  })

  it('without TRUST_PROXY a forged X-Forwarded-For does not buy a new budget', async () => {
    const base = await serve({ RATE_LIMIT_PER_MINUTE: '3' })
    for (let i = 0; i < 3; i++) expect((await hit(base, `198.51.100.${i}`)).status).toBe(200)
    expect((await hit(base, '198.51.100.99')).status).toBe(429)
  })
})
