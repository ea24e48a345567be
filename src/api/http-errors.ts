// The error shape of SPEC section 6: `{"error": "<Name>", "message": "..."}`. Routes throw
// these; the app's error handler turns any thrown error into that shape.

export const ERROR_NAMES: Record<number, string> = {
  400: 'InvalidRequest',
  401: 'AuthRequired',
  404: 'NotFound',
  429: 'RateLimitExceeded',
  500: 'InternalServerError',
  503: 'ServiceUnavailable',
}

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
  if (e.keyword === 'enum' && Array.isArray(p.allowedValues))
    return `${name} must be one of: ${p.allowedValues.join(', ')}`
  return `${name} ${e.message ?? 'is invalid'}`
}
