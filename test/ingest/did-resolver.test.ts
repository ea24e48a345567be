import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Secp256k1Keypair } from '@atproto/crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLimiter } from '../../src/faults/limiter.ts'
import { createDidResolver } from '../../src/ingest/did-resolver.ts'
import { concurrencyProbe } from '../helpers/concurrency.ts'
import { counterValue, testMetrics } from '../helpers/ingest-kit.ts'

// A stand-in PLC directory that counts requests and can be slowed down or broken, to see
// what the cache, the deduplication and the concurrency cap save it from.

const did = (n: number) => `did:plc:${String(n).padStart(24, 'a')}`
let server: Server
let plcUrl: string
let key: string
const state = { requests: 0, inFlight: 0, maxInFlight: 0, delayMs: 0, fail: false }

function doc(id: string) {
  return {
    id,
    alsoKnownAs: ['at://Someone.Test'],
    verificationMethod: [
      {
        id: `${id}#atproto`,
        type: 'Multikey',
        controller: id,
        publicKeyMultibase: key.slice('did:key:'.length),
      },
    ],
    service: [
      {
        id: '#atproto_pds',
        type: 'AtprotoPersonalDataServer',
        serviceEndpoint: 'https://pds.example.com',
      },
    ],
  }
}

beforeAll(async () => {
  key = (await Secp256k1Keypair.create()).did()
  server = createServer(async (req, res) => {
    state.requests++
    state.inFlight++
    state.maxInFlight = Math.max(state.maxInFlight, state.inFlight)
    await new Promise((r) => setTimeout(r, state.delayMs))
    state.inFlight--
    const id = decodeURIComponent((req.url ?? '/').slice(1))
    if (state.fail) res.writeHead(503).end()
    else if (id.endsWith('zzz')) res.writeHead(404).end('not found')
    else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(doc(id)))
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  plcUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(() => new Promise<void>((r) => server.close(() => r())))

const reset = (over: Partial<typeof state> = {}) =>
  Object.assign(state, { requests: 0, inFlight: 0, maxInFlight: 0, delayMs: 0, fail: false }, over)

describe('DID resolver', () => {
  it('extracts the signing key, PDS endpoint and lowercased handle', async () => {
    reset()
    const r = createDidResolver({ plcUrl })
    const got = await r.resolve(did(1))
    expect(got).toMatchObject({
      signingKey: key,
      pds: 'https://pds.example.com',
      handle: 'someone.test',
    })
    expect(await r.resolveKey(did(1))).toBe(key)
    expect(await r.resolvePds(did(1))).toBe('https://pds.example.com')
    expect(state.requests).toBe(1)
    expect(await r.resolveKey('did:key:zQ3abc')).toBe('did:key:zQ3abc')
  })

  it('shares one request among concurrent lookups of a DID', async () => {
    reset({ delayMs: 30 })
    const r = createDidResolver({ plcUrl })
    const all = await Promise.all(Array.from({ length: 20 }, () => r.resolveKey(did(2))))
    expect(new Set(all)).toEqual(new Set([key]))
    expect(state.requests).toBe(1)
  })

  it('caps requests in flight', async () => {
    reset({ delayMs: 20 })
    const r = createDidResolver({ plcUrl, concurrency: 3 })
    await Promise.all(Array.from({ length: 12 }, (_, i) => r.resolve(did(100 + i))))
    expect(state.requests).toBe(12)
    expect(state.maxInFlight).toBeLessThanOrEqual(3)
  })

  it('expires entries after the TTL, evicts the least recently used, and refreshes on demand', async () => {
    reset()
    let now = 1_000_000
    const r = createDidResolver({
      plcUrl,
      ttlMs: 1000,
      cacheSize: 2,
      minRefreshMs: 100,
      now: () => now,
    })
    await r.resolve(did(3))
    await r.resolve(did(3))
    expect(state.requests).toBe(1)
    now += 1001
    await r.resolve(did(3))
    expect(state.requests).toBe(2)
    await r.resolve(did(3), { forceRefresh: true })
    expect(state.requests).toBe(2) // younger than minRefreshMs
    now += 200
    await r.resolve(did(3), { forceRefresh: true })
    expect(state.requests).toBe(3)
    await r.resolve(did(4))
    await r.resolve(did(3)) // touch: did(4) is now least recently used
    await r.resolve(did(5))
    await r.resolve(did(3))
    expect(state.requests).toBe(5)
    await r.resolve(did(4))
    expect(state.requests).toBe(6)
  })

  it('remembers a missing DID briefly and says so', async () => {
    reset()
    const r = createDidResolver({ plcUrl })
    const missing = 'did:plc:aaaaaaaaaaaaaaaaaaaaazzz'
    expect(await r.resolve(missing)).toBeNull()
    expect(await r.resolve(missing)).toBeNull()
    expect(state.requests).toBe(1)
    await expect(r.resolveKey(missing)).rejects.toThrow(/not found/)
  })

  it('serves a stale document when the directory fails, and throws without one', async () => {
    reset()
    let now = 0
    const r = createDidResolver({ plcUrl, ttlMs: 10, now: () => now })
    await r.resolve(did(6))
    now += 100
    state.fail = true
    expect(await r.resolveKey(did(6))).toBe(key)
    await expect(r.resolve(did(7))).rejects.toThrow()
  })

  it('refuses did:web on http by default (SSRF) and unknown methods', async () => {
    const r = createDidResolver({ plcUrl })
    await expect(r.resolve('did:web:localhost%3A1')).rejects.toThrow()
    await expect(r.resolve('did:example:x')).rejects.toThrow(/unsupported/)
  })
})

describe('limiter', () => {
  it('never runs more than its maximum, even with callers arriving as slots free up', async () => {
    const limit = createLimiter(2)
    const probe = concurrencyProbe(1)
    const waves = Array.from({ length: 10 }, () => limit(probe.task).then(() => limit(probe.task)))
    await Promise.all(waves)
    expect(probe.peak).toBe(2)
  })
})

describe('DID resolver upstream counting', () => {
  it('counts each document fetch by what it came to, and a cache hit not at all', async () => {
    const metrics = testMetrics()
    const r = createDidResolver({ plcUrl, metrics })
    reset()
    await r.resolve(did(900))
    await r.resolve(did(900))
    expect(await r.resolve('did:plc:aaaaaaaaaaaaaaaaaaaaazzz')).toBeNull()
    reset({ fail: true })
    await expect(r.resolve(did(901))).rejects.toThrow()
    const count = (status: string) =>
      counterValue(metrics, { endpoint: 'plc', status }, 'upstreamRequestsTotal')
    expect([await count('200'), await count('404'), await count('error')]).toEqual([1, 1, 1])
  })
})
