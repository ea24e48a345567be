import { dbErrorCode, isRetryable, isStatementTimeout } from '../faults/errors.ts'

// The error shape of SPEC section 6, `{"error": "<Name>", "message": "..."}`, into which the
// app turns any thrown error (errorAnswer), and the browse UI into a page of the same status.

export const ERROR_NAMES: Record<number, string> = {
  400: 'InvalidRequest',
  401: 'AuthRequired',
  404: 'NotFound',
  429: 'RateLimitExceeded',
  500: 'InternalServerError',
  503: 'ServiceUnavailable',
}

const errorSchema = {
  type: 'object',
  properties: {
    error: {
      type: 'string',
      description: 'InvalidRequest, NotFound, AuthRequired, RateLimitExceeded, InternalServerError',
    },
    message: { type: 'string' },
  },
  required: ['error', 'message'],
} as const

/** The routes' 4xx and 5xx answers, as their schemas document them. */
export const errorResponses = { '4xx': errorSchema, '5xx': errorSchema } as const

export class HttpError extends Error {
  readonly statusCode: number
  constructor(statusCode: number, message: string) {
    super(message)
    this.name = 'HttpError'
    this.statusCode = statusCode
  }
}

export const badRequest = (message: string): HttpError => new HttpError(400, message)
export const notFound = (message: string): HttpError => new HttpError(404, message)

/** The error name for a status: 4xx without a name of its own is still the caller's fault. */
export function errorNameOf(status: number): string {
  return ERROR_NAMES[status] ?? (status < 500 ? 'InvalidRequest' : 'InternalServerError')
}

/** What the API answers for an error: its status and the message a client may see. */
export interface ErrorAnswer {
  status: number
  message: string
  /** The database is down, restarting or slow: a 503 worth retrying, not a fault of this code. */
  unavailable: boolean
  /** The read was cancelled at the read timeout (READ_TIMEOUT_MS): the database is slow. */
  slow?: boolean
}

const hasHttpStatus = (err: { statusCode?: unknown; status?: unknown }): boolean =>
  typeof err.statusCode === 'number' || typeof err.status === 'number'

interface ThrownError {
  message: string
  statusCode?: number
  validation?: AjvError[]
  validationContext?: string
}

/**
 * The answer to any error a request raised: a schema failure is a 400 naming the parameter,
 * a database down or restarting a retryable 503 said at once (not a 500, not a hang), an
 * error carrying its own status keeps it, and anything unexpected stays private.
 */
export function errorAnswer(err: ThrownError): ErrorAnswer {
  if (err.validation)
    return {
      status: 400,
      message: validationMessage(err.validation, err.validationContext),
      unavailable: false,
    }
  if (isStatementTimeout(err) && !hasHttpStatus(err))
    return {
      status: 503,
      message: 'database slow: the read took longer than the read timeout, try again later',
      unavailable: true,
      slow: true,
    }
  if (isRetryable(err) && !hasHttpStatus(err))
    return { status: 503, message: `database unavailable (${dbErrorCode(err)})`, unavailable: true }
  const code = err.statusCode
  const status = code && code >= 400 && code < 600 ? code : 500
  const message =
    status < 500 || err instanceof HttpError
      ? err.message
      : status === 503
        ? 'request timed out'
        : 'internal error'
  // A handler stuck past its timeout (a slow database that no statement timeout cut) is a
  // 503 worth retrying too.
  return { status, message, unavailable: status === 503 }
}

/** The query-string integer syntax (params.ts integerParam, strictInteger). */
export const DECIMAL_PATTERN = '^(0|[1-9][0-9]*)$'

interface AjvError {
  instancePath?: string
  keyword?: string
  message?: string
  params?: Record<string, unknown>
}

/**
 * Ajv's messages name the schema path ("querystring/limit must be <= 100"); clients want
 * the parameter they sent, and for enums the values that would have worked.
 */
export function validationMessage(errors: AjvError[], context: string | undefined): string {
  const e = errors[0] ?? {}
  const p = e.params ?? {}
  const name =
    (e.instancePath ?? '').replace(/^\//, '').replaceAll('/', '.') ||
    (p.missingProperty as string | undefined) ||
    (p.additionalProperty as string | undefined) ||
    context ||
    'request'
  if (e.keyword === 'required')
    return `${context ?? 'request'} is missing required parameter ${name}`
  if (e.keyword === 'pattern' && p.pattern === DECIMAL_PATTERN)
    return `${name} must be an integer in plain decimal digits (no sign, exponent, hex, fraction, spaces or leading zeros)`
  if (e.keyword === 'enum' && Array.isArray(p.allowedValues))
    return `${name} must be one of: ${p.allowedValues.join(', ')}`
  return `${name} ${e.message ?? 'is invalid'}`
}
