import { P256Keypair, Secp256k1Keypair } from '@atproto/crypto'
import pino from 'pino'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { verifySignatureNative } from '../../src/ingest/firehose/native-verify.ts'
import { createVerifyPool, type VerifyPool } from '../../src/ingest/firehose/verify-pool.ts'

const logger = pino({ level: 'silent' })
let pool: VerifyPool | null = null
afterEach(async () => {
  await pool?.close()
  pool = null
})

type Verdict = boolean | `throws: ${string}`
const verdictOf = async (f: () => boolean | Promise<boolean>): Promise<Verdict> => {
  try {
    return await f()
  } catch (err) {
    return `throws: ${(err as Error).message}`
  }
}

/** Valid, tampered, wrong-key, malformed-signature and malformed-key cases on both curves. */
async function cases() {
  const out: Array<{ key: string; data: Uint8Array; sig: Uint8Array }> = []
  for (const create of [() => Secp256k1Keypair.create(), () => P256Keypair.create()]) {
    const a = await create()
    const b = await create()
    for (let i = 0; i < 20; i++) {
      const data = new TextEncoder().encode(`commit ${i}`)
      const sig = await a.sign(data)
      out.push({ key: a.did(), data, sig })
      out.push({ key: a.did(), data: new TextEncoder().encode(`tampered ${i}`), sig })
      out.push({ key: b.did(), data, sig })
    }
    out.push({ key: a.did(), data: new Uint8Array([1]), sig: new Uint8Array(63) })
  }
  out.push({ key: 'did:key:zNotAKey', data: new Uint8Array([1]), sig: new Uint8Array(64) })
  return out
}

/** Checks every case through `p`, all at once (batched, spread over the workers), and
 * expects the verdicts the inline check gives; returns those. */
async function expectInlineVerdicts(p: VerifyPool) {
  const all = await cases()
  const got = await Promise.all(all.map((c) => verdictOf(() => p.check(c.key, c.data, c.sig))))
  const want = await Promise.all(
    all.map((c) => verdictOf(() => verifySignatureNative(c.key, c.data, c.sig))),
  )
  expect(got).toEqual(want)
  return want
}

describe('createVerifyPool', () => {
  it.each([0, 1, 2])('gives the inline verdict on every input, %i threads', async (threads) => {
    pool = createVerifyPool({ threads, logger })
    const want = await expectInlineVerdicts(pool)
    expect(want.filter((v) => v === true).length).toBe(40)
    expect(want.filter((v) => typeof v === 'string').length).toBe(3)
  })

  it('checks signatures handed over as views into a larger frame', async () => {
    pool = createVerifyPool({ threads: 1, logger })
    const kp = await Secp256k1Keypair.create()
    const data = new TextEncoder().encode('in a big frame')
    const sig = await kp.sign(data)
    const frame = new Uint8Array(1 << 20)
    frame.set(data, 1000)
    frame.set(sig, 5000)
    const ok = await pool.check(
      kp.did(),
      frame.subarray(1000, 1000 + data.length),
      frame.subarray(5000, 5064),
    )
    expect(ok).toBe(true)
  })

  it('answers every check when its worker dies, and keeps answering', async () => {
    const logs: string[] = []
    const crashLogger = pino({ level: 'error' }, { write: (l: string) => logs.push(l) })
    pool = createVerifyPool({
      threads: 2,
      logger: crashLogger,
      workerUrl: new URL('../fixtures/crashing-verify-worker.ts', import.meta.url),
    })
    const all = await cases()
    for (let round = 0; round < 2; round++) {
      const got = await Promise.all(
        all.map((c) => verdictOf(() => (pool as VerifyPool).check(c.key, c.data, c.sig))),
      )
      const want = await Promise.all(
        all.map((c) => verdictOf(() => verifySignatureNative(c.key, c.data, c.sig))),
      )
      expect(got).toEqual(want)
    }
    expect(logs.join('')).toMatch(/signature worker died/)
  })

  it('stops starting workers that die as they load, and checks every signature here', async () => {
    const logs: string[] = []
    pool = createVerifyPool({
      threads: 1,
      logger: pino({ level: 'error' }, { write: (l: string) => logs.push(l) }),
      workerUrl: new URL('../fixtures/broken-worker.ts', import.meta.url),
    })
    await vi.waitFor(() => expect(logs.join('')).toMatch(/signature workers keep dying/), {
      timeout: 20_000,
      interval: 50,
    })
    await expectInlineVerdicts(pool)
    // One failed start stops piscina; the pool's own bound is five deaths in a row.
    const deaths = logs.filter((l) => /signature worker died/.test(l)).length
    expect(deaths).toBeGreaterThanOrEqual(1)
    expect(deaths).toBeLessThanOrEqual(5)
  })

  it('refuses checks once closed', async () => {
    pool = createVerifyPool({ threads: 1, logger })
    await pool.close()
    await expect(pool.check('did:key:x', new Uint8Array(1), new Uint8Array(64))).rejects.toThrow(
      /closed/,
    )
  })
})
