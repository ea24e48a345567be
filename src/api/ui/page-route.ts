import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Database } from '../../db/client.ts'
import type { Nsids } from '../../model/nsids.ts'
import { type Read, runRead } from '../catalog/define.ts'
import type { RawParams } from '../catalog/lexicons.ts'
import { badRequest, errorAnswer, HttpError } from '../http-errors.ts'
import { type Html, render } from './html.ts'
import { errorPage } from './layout.ts'

// Every page goes through `page`: its query is checked, and a failure becomes an HTML error
// page of the API's status and message (a 500's details only go to the log). Pages call the
// catalog's reads, so a page shows what the API shows and fails as it fails.

export interface PageContext {
  app: FastifyInstance
  db: Database
  nsids: Nsids
}

/** One of the catalog's reads, its parameters checked as its route checks them. */
export type PageRead = <P, K, T>(read: Read<P, K, T>, params: RawParams) => Promise<T>

export interface PageInput {
  params: Record<string, string>
  query: Record<string, string | undefined>
  read: PageRead
}

type Render = (input: PageInput, ctx: PageContext) => Promise<Html>

const shown = (s: string): string => (s.length > 64 ? `${s.slice(0, 64)}…` : s)

/**
 * A page's query string. A parameter it does not take is a 400 naming it, so a mistyped
 * shared link says what is wrong instead of showing an unfiltered list; empty values count as
 * absent, since a GET form sends every field. Values are checked by the API's reads.
 */
function pageQuery(raw: unknown, allowed: readonly string[]): PageInput['query'] {
  const out: PageInput['query'] = {}
  const entries = raw && typeof raw === 'object' ? Object.entries(raw) : []
  for (const [key, value] of entries) {
    if (!allowed.includes(key)) {
      const takes = allowed.length ? allowed.join(', ') : 'none'
      throw badRequest(`unknown parameter "${shown(key)}": this page takes ${takes}`)
    }
    if (typeof value !== 'string') throw badRequest(`parameter ${key} is given more than once`)
    if (value !== '') out[key] = value
  }
  return out
}

function sendPage(reply: FastifyReply, status: number, body: string): FastifyReply {
  return reply
    .status(status)
    .type('text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .send(body)
}

export async function sendError(
  reply: FastifyReply,
  status: number,
  message: string,
): Promise<FastifyReply> {
  return sendPage(reply, status, await render(errorPage(status, message)))
}

function messageOf(err: unknown, request: FastifyRequest): { status: number; message: string } {
  // What the API would answer (http-errors.ts errorAnswer), as a page.
  const { status, message, unavailable } = errorAnswer(
    err instanceof Error ? err : new Error(String(err)),
  )
  if (status < 500) return { status, message }
  if (unavailable) request.log.warn({ err }, 'page failed: database unavailable')
  if (status === 503) return { status, message: `${message}; try again in a moment` }
  request.log.error({ err }, 'page failed')
  return { status: 500, message: 'the page could not be built; the error is in the server log' }
}

/** What a read answers, or null for its 404: for the parts of a page that may be missing. */
export async function found<T>(answer: Promise<T>): Promise<T | null> {
  try {
    return await answer
  } catch (err) {
    if (err instanceof HttpError && err.statusCode === 404) return null
    throw err
  }
}

export function page(
  ctx: PageContext,
  path: string,
  allowed: readonly string[],
  build: Render,
): void {
  ctx.app.get(path, async (request, reply) => {
    try {
      const query = pageQuery(request.query, allowed)
      const params = (request.params ?? {}) as Record<string, string>
      const read: PageRead = (r, raw) => runRead(ctx.app.reads, r, raw)
      return sendPage(reply, 200, await render(await build({ params, query, read }, ctx)))
    } catch (err) {
      const { status, message } = messageOf(err, request)
      return sendError(reply, status, message)
    }
  })
}
