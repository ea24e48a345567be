import { randomBytes, timingSafeEqual } from 'node:crypto'
import type { FastifyInstance } from 'fastify'

// Pages get their data from the JSON API itself, in process (`app.inject`): the same
// routes, validation, visibility rules and error messages, so a page can never show what
// the API would hide, and a new field of the API (reasons, provenance) reaches the page
// without a second code path. The inner requests carry a per-process token so they are
// neither rate-limited a second time (the page request already was) nor counted again in
// the request histogram; nobody outside the process knows the token.

const HEADER = 'x-prompt-appview-ui'
const TOKEN = randomBytes(24).toString('base64url')
const TOKEN_BYTES = Buffer.from(TOKEN)

export function isInternalRequest(headers: Record<string, string | string[] | undefined>): boolean {
  const v = headers[HEADER]
  if (typeof v !== 'string' || v.length !== TOKEN.length) return false
  return timingSafeEqual(Buffer.from(v), TOKEN_BYTES)
}

/** A page that cannot be shown: the status and a message meant for the reader. */
export class UiError extends Error {
  readonly statusCode: number
  constructor(statusCode: number, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'UiError'
    this.statusCode = statusCode
  }
}

export type Query = Record<string, string | undefined>

function urlOf(path: string, query: Query = {}): string {
  const qs = new URLSearchParams()
  for (const [k, v] of Object.entries(query)) if (v !== undefined) qs.set(k, v)
  const s = qs.toString()
  return s ? `${path}?${s}` : path
}

export interface ApiAnswer {
  status: number
  body: string
}

export async function apiRaw(
  app: FastifyInstance,
  path: string,
  query?: Query,
): Promise<ApiAnswer> {
  const res = await app.inject({
    method: 'GET',
    url: urlOf(path, query),
    headers: { [HEADER]: TOKEN },
  })
  return { status: res.statusCode, body: res.body }
}

function errorOf(answer: ApiAnswer): UiError {
  let message = `the API answered ${answer.status}`
  try {
    const parsed = JSON.parse(answer.body) as { message?: unknown }
    if (typeof parsed.message === 'string') message = parsed.message
  } catch {
    // not the API's error shape: keep the generic message
  }
  return new UiError(answer.status, message)
}

/** The JSON answer of a GET, or a UiError carrying the API's status and message. */
export async function apiGet<T>(app: FastifyInstance, path: string, query?: Query): Promise<T> {
  const answer = await apiRaw(app, path, query)
  if (answer.status !== 200) throw errorOf(answer)
  return JSON.parse(answer.body) as T
}

/** As apiGet, but a 404 is null: for the parts of a page that may be missing. */
export async function apiFind<T>(
  app: FastifyInstance,
  path: string,
  query?: Query,
): Promise<T | null> {
  const answer = await apiRaw(app, path, query)
  if (answer.status === 404) return null
  if (answer.status !== 200) throw errorOf(answer)
  return JSON.parse(answer.body) as T
}

/** A path segment for the API or a page: record keys and DIDs travel encoded. */
export const seg = (s: string): string => encodeURIComponent(s)
