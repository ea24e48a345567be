// Few precise error classes, each with its `cause`. Whether a failure is worth retrying is
// decided by what failed (isRetryableDbError below for the database, each source's session
// for its upstream), not by a flag on the error.

export class AppError extends Error {
  constructor(message: string, opts: { cause?: unknown } = {}) {
    super(message, { cause: opts.cause })
    this.name = new.target.name
  }
}

/** Another process holds the PGlite data directory. */
export class DataDirLockedError extends AppError {}

/** An upstream (PDS, PLC, relay) failed; usually worth retrying. */
export class UpstreamError extends AppError {}

// Postgres SQLSTATE classes that mean "try again": connection trouble, serialization
// failures and deadlocks, resource exhaustion, operator intervention.
const RETRYABLE_SQLSTATE = /^(08|40|53|57)/

export function isRetryableDbError(err: unknown): boolean {
  const e = err as { code?: unknown; cause?: unknown } | null
  if (!e || typeof e !== 'object') return false
  if (typeof e.code === 'string') {
    if (RETRYABLE_SQLSTATE.test(e.code)) return true
    if (
      [
        'ECONNRESET',
        'ECONNREFUSED',
        'ETIMEDOUT',
        'EPIPE',
        'CONNECTION_CLOSED',
        'CONNECTION_ENDED',
        'CONNECTION_DESTROYED',
      ].includes(e.code)
    )
      return true
  }
  return e.cause ? isRetryableDbError(e.cause) : false
}

/** The first driver or SQLSTATE code along the cause chain, for a message; else 'unknown'. */
export function dbErrorCode(err: unknown): string {
  for (let e = err as { code?: unknown; cause?: unknown } | null, i = 0; e && i < 10; i++) {
    if (typeof e.code === 'string') return e.code
    e = e.cause as typeof e
  }
  return 'unknown'
}
