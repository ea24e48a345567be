import { describe, expect, it } from 'vitest'
import { AppError, DataDirLockedError, isRetryable, UpstreamError } from '../../src/errors.ts'
import { RepoFetchError } from '../../src/ingest/repo-snapshot.ts'

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
    expect(isRetryable(new RepoFetchError('invalid repo', false, { cause }))).toBe(false)
    expect(isRetryable(new RepoFetchError('getRepo: 502', true))).toBe(true)
    expect(isRetryable(new UpstreamError('dictionary: 503', { retryable: true }))).toBe(true)
    expect(isRetryable(new DataDirLockedError('locked', { cause }))).toBe(false)
    expect(isRetryable(new AppError('x'))).toBe(false)
  })
})
