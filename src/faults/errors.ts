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
 * The store cannot take writes now, through no fault of the data: its disk is full (or
 * nearly, see PGLITE_MIN_FREE_MB), or an embedded PGlite stopped on a PANIC and is being
 * reopened. Always retryable: the event that met it is never skipped.
 */
export class StoreFaultError extends AppError {
  readonly reason: StoreFault
  constructor(message: string, o: { cause?: unknown; reason: StoreFault }) {
    super(message, { cause: o.cause, retryable: true })
    this.reason = o.reason
  }
}

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

// The one retry classifier, asked by database and ingestion retries alike: retryable (the
// store or an upstream is down or busy) or permanent (the input or the code is wrong).

// SQLSTATE classes that mean "try again": connection trouble, serialization failures and
// deadlocks, resource exhaustion, operator intervention.
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

type Classifiable = Partial<
  Record<'severity' | 'retryable' | 'code' | 'name' | 'status' | 'message' | 'cause', unknown>
>

/**
 * Walks the cause chain: the first error that says `retryable` itself (an AppError) decides;
 * else a retryable SQLSTATE or connection code, a full disk, a PGlite PANIC, a timeout, or an
 * HTTP 429 or 5xx anywhere along it makes the failure retryable. Anything else is permanent.
 */
export function isRetryable(err: unknown): boolean {
  for (const e of causeChain(err)) {
    if (typeof e.retryable === 'boolean') return e.retryable
    if (isTransientLink(e) || isPanicLink(e) || isDiskFullLink(e)) return true
  }
  return false
}

/** The links of an error's cause chain, `err` first, at most 10 (a chain may loop). */
export function* causeChain(err: unknown): Generator<Classifiable> {
  let e = err as Classifiable | null
  for (let depth = 0; depth < 10 && e && typeof e === 'object'; depth++) {
    yield e
    e = e.cause as Classifiable | null
  }
}

const codeOf = (e: Classifiable): string => (typeof e.code === 'string' ? e.code : '')
const isRetryableCode = (code: string) => RETRYABLE_SQLSTATE.test(code) || RETRYABLE_CODES.has(code)

/** One link of a cause chain that names a transient failure by its code, name or status. */
function isTransientLink(e: Classifiable): boolean {
  return (
    isRetryableCode(codeOf(e)) ||
    e.name === 'TimeoutError' ||
    (typeof e.status === 'number' && (e.status === 429 || e.status >= 500)) ||
    (e instanceof TypeError && FETCH_FAILURES.has(e.message))
  )
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
  for (const e of causeChain(err)) if (typeof e.code === 'string') return e.code
  return 'unknown'
}

// A full disk is the store's fault, never the event's: it must pause ingestion, not send an
// event down the count-and-skip path. Postgres says 53100 (disk_full); a file write says
// ENOSPC or EDQUOT (PGlite's Postgres maps those to 53100 too). Codes only, never message
// text: a driver's message quotes the statement's parameters, which carry record content.
const DISK_FULL_CODES = new Set(['53100', 'ENOSPC', 'EDQUOT'])

/** Why the store refuses work that is not the work's fault. */
export type StoreFault = 'disk_full' | 'database'

/**
 * `disk_full` when a link of the cause chain says the disk or quota is full; `database`
 * for any other fault of the store (a PGlite PANIC, resource exhaustion, the server gone);
 * null when the error is not the store's (a bad value, a bug).
 */
export function storeFaultOf(err: unknown): StoreFault | null {
  let store = false
  for (const e of causeChain(err)) {
    if (e instanceof StoreFaultError) return e.reason
    if (isDiskFullLink(e)) return 'disk_full'
    if (isPanicLink(e) || isRetryableCode(codeOf(e))) store = true
  }
  return store ? 'database' : null
}

/**
 * A PANIC (PGlite reports it as an error's severity; a Postgres server restarts instead):
 * the in-process database can no longer be trusted with another statement.
 */
export function isPanic(err: unknown): boolean {
  return [...causeChain(err)].some(isPanicLink)
}

const isDiskFullLink = (e: Classifiable) => DISK_FULL_CODES.has(codeOf(e))
const isPanicLink = (e: Classifiable) => e.severity === 'PANIC'

/** Postgres cancelled the statement at statement_timeout: the database is slow, not gone. */
export function isStatementTimeout(err: unknown): boolean {
  return dbErrorCode(err) === '57014'
}
