import { describe, expect, it } from 'vitest'
import { readAgainIfConnectionLost } from '../../src/db/retry.ts'
import {
  AppError,
  DataDirLockedError,
  isConnectionError,
  isRetryable,
  UpstreamError,
} from '../../src/faults/errors.ts'

// The one retry classifier, as the store retries (db/retry.ts, the pipeline) and the
// ingestion retries (repo fetches, resyncs, backfill) read it.

const coded = (code: string) => Object.assign(new Error(code), { code })
const status = (n: number) => Object.assign(new Error(`HTTP ${n}`), { status: n })

describe('isRetryable', () => {
  it('retries connection trouble and transient SQLSTATE classes', () => {
    for (const code of [
      'ECONNREFUSED',
      'ECONNRESET',
      'CONNECTION_ENDED',
      '08006',
      '40001',
      '57P01',
    ])
      expect(isRetryable(coded(code)), code).toBe(true)
  })

  it('does not retry what would fail again', () => {
    for (const code of ['23505', '22P02', '42P01', 'ENOENT'])
      expect(isRetryable(coded(code)), code).toBe(false)
    expect(isRetryable(new Error('plain'))).toBe(false)
    expect(isRetryable(new TypeError("Cannot read properties of undefined (reading 'x')"))).toBe(
      false,
    )
    expect(isRetryable(null)).toBe(false)
    expect(isRetryable('a string')).toBe(false)
  })

  it('finds the reason along the cause chain', () => {
    expect(isRetryable(new Error('query failed', { cause: coded('ECONNREFUSED') }))).toBe(true)
    expect(
      isRetryable(new TypeError('fetch failed', { cause: new Error('other side closed') })),
    ).toBe(true)
    expect(isRetryable(new Error('outer', { cause: new Error('inner') }))).toBe(false)
  })

  it('retries timeouts, 429 and 5xx, not other statuses', () => {
    expect(isRetryable(Object.assign(new Error('t'), { name: 'TimeoutError' }))).toBe(true)
    expect([429, 500, 503, 400, 404].map((n) => isRetryable(status(n)))).toEqual([
      true,
      true,
      true,
      false,
      false,
    ])
  })

  it('lets an error that says retryable itself decide, over its cause', () => {
    const cause = coded('ECONNREFUSED')
    expect(isRetryable(new UpstreamError('invalid repo', { cause }))).toBe(false)
    expect(isRetryable(new UpstreamError('getRepo: 502', { retryable: true }))).toBe(true)
    expect(isRetryable(new UpstreamError('dictionary: 503', { retryable: true }))).toBe(true)
    expect(isRetryable(new DataDirLockedError('locked', { cause }))).toBe(false)
    expect(isRetryable(new AppError('x'))).toBe(false)
  })
})

describe('a read whose connection was lost', () => {
  it('is told from other retryable failures: lost or refused connections only', () => {
    for (const code of [
      'ECONNRESET',
      'ECONNREFUSED',
      'CONNECTION_CLOSED',
      '08006',
      '57P01',
      '57P03',
    ])
      expect(isConnectionError(coded(code)), code).toBe(true)
    // Retryable, but not a lost connection: a second try on a fresh one would not help now.
    for (const code of ['40001', '53300', '57014', 'CONNECT_TIMEOUT', '23505'])
      expect(isConnectionError(coded(code)), code).toBe(false)
    expect(isConnectionError(new AppError('wrapped', { cause: coded('57P03') }))).toBe(true)
  })

  it('runs once more, and only once, and only for a lost connection', async () => {
    const attempts = (failures: Error[]) => {
      let n = 0
      const read = async () => {
        const f = failures[n++]
        if (f) throw f
        return n
      }
      return { run: () => readAgainIfConnectionLost(read), calls: () => n }
    }
    const once = attempts([coded('57P01')])
    expect(await once.run()).toBe(2)
    const twice = attempts([coded('57P01'), coded('ECONNREFUSED')])
    await expect(twice.run()).rejects.toMatchObject({ code: 'ECONNREFUSED' })
    expect(twice.calls()).toBe(2)
    const other = attempts([coded('23505')])
    await expect(other.run()).rejects.toMatchObject({ code: '23505' })
    expect(other.calls()).toBe(1)
  })
})
