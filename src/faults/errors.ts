// Few precise error classes. `retryable` (read by isRetryable below) decides between
// retrying and counting and skipping what caused it.

export class AppError extends Error {
  readonly retryable: boolean
  constructor(message: string, opts: { cause?: unknown; retryable?: boolean } = {}) {
    super(message, { cause: opts.cause })
    this.name = new.target.name
    this.retryable = opts.retryable ?? false
  }
}

/** Another process holds the PGlite data directory. */
export class DataDirLockedError extends AppError {}

/** The PGlite data directory (or the template a first start fills it from) cannot be opened. */
export class DataDirError extends AppError {}

/**
 * An upstream (PDS, PLC, relay) failed. `reason` names how, for counting (an HTTP status
 * class, `rate_limited`, `network`); `retryAfterMs` is the wait the upstream asked for.
 */
export class UpstreamError extends AppError {
  readonly reason: string
  readonly retryAfterMs: number | null
  constructor(
    message: string,
    o: { cause?: unknown; retryable?: boolean; reason?: string; retryAfterMs?: number | null } = {},
  ) {
    super(message, o)
    this.reason = o.reason ?? 'upstream'
    this.retryAfterMs = o.retryAfterMs ?? null
  }
}

// The one retry classifier: retryable (the store or an upstream is down or busy, trying
// again later can succeed) or permanent (the input or the code is wrong, trying again
// repeats the failure). Database retries and ingestion retries both ask it.

// Postgres SQLSTATE classes that mean "try again": connection trouble, serialization
// failures and deadlocks, resource exhaustion, operator intervention.
const RETRYABLE_SQLSTATE = /^(08|40|53|57)/
// Connections refused, reset or closed: Node's sockets and postgres.js.
const RETRYABLE_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EPIPE',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
])
// What fetch (undici) rejects with when the network failed, whatever the socket said:
// other TypeErrors are bugs, and a bug retried is a bug repeated.
const FETCH_FAILURES = new Set(['fetch failed', 'terminated'])

interface Classifiable {
  retryable?: unknown
  code?: unknown
  name?: unknown
  status?: unknown
  message?: unknown
  cause?: unknown
}

/**
 * Walks the cause chain: the first error that says `retryable` itself (AppError,
 * RepoFetchError) decides; else a retryable SQLSTATE or connection code, a timeout, or
 * an HTTP 429 or 5xx anywhere along it makes the failure retryable. Anything else is
 * permanent.
 */
export function isRetryable(err: unknown): boolean {
  let e = err as Classifiable | null
  for (let depth = 0; depth < 10 && e && typeof e === 'object'; depth++) {
    if (typeof e.retryable === 'boolean') return e.retryable
    if (isTransientLink(e)) return true
    e = e.cause as Classifiable | null
  }
  return false
}

/** One link of a cause chain that names a transient failure by its code, name or status. */
function isTransientLink(e: Classifiable): boolean {
  if (
    typeof e.code === 'string' &&
    (RETRYABLE_SQLSTATE.test(e.code) || RETRYABLE_CODES.has(e.code))
  )
    return true
  if (e.name === 'TimeoutError') return true
  if (typeof e.status === 'number' && (e.status === 429 || e.status >= 500)) return true
  return e instanceof TypeError && FETCH_FAILURES.has(e.message)
}

// A connection lost or refused while the server stops or starts (admin shutdown, crash,
// starting up): the statement died with its connection, and a fresh one can run it.
const CONNECTION_SQLSTATE = /^(08|57P0[123])/

/** True when `err` (or its cause) says the statement's connection was lost or refused. */
export function isConnectionError(err: unknown): boolean {
  const code = dbErrorCode(err)
  return CONNECTION_SQLSTATE.test(code) || RETRYABLE_CODES.has(code)
}

/** The first driver or SQLSTATE code along the cause chain, for a message; else 'unknown'. */
export function dbErrorCode(err: unknown): string {
  for (let e = err as { code?: unknown; cause?: unknown } | null, i = 0; e && i < 10; i++) {
    if (typeof e.code === 'string') return e.code
    e = e.cause as typeof e
  }
  return 'unknown'
}
