import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Database } from '../../db/client.ts'
import type { Nsids } from '../../model/nsids.ts'
import { badRequest, errorAnswer, HttpError, validationMessage } from '../http-errors.ts'
import type { Read, ReadInput } from '../queries.ts'
import { type Html, render } from './html.ts'
import { errorPage } from './layout.ts'
import { type PageQuery, pageQuery } from './page-params.ts'

// Every page goes through `page`: the query is checked against the parameters the page
// takes, the page renders, and whatever fails becomes an HTML error page: the reader's
// mistakes as 400/404 naming the problem, an outage as 503, anything else as a plain 500
// whose details go to the log only (never a stack trace on the page).
//
// Pages read what the JSON API answers by calling the API's own reads (queries.ts), with
// the parameters the route would get, checked first by the route's own schemas: so a page
// shows what the API shows, hides what it hides, and fails with its status and message.

export interface PageContext {
  app: FastifyInstance
  db: Database
  nsids: Nsids
}

/** One of the API's reads, with this request: its parameters checked as its route checks them. */
export type PageRead = <P, Q, T>(read: Read<P, Q, T>, input: ReadInput<P, Q>) => Promise<T>

export interface PageInput {
  params: Record<string, string>
  query: PageQuery
  read: PageRead
}

type Render = (input: PageInput, ctx: PageContext) => Promise<Html>

export function sendPage(reply: FastifyReply, status: number, body: string): FastifyReply {
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

export function messageOf(
  err: unknown,
  request: FastifyRequest,
): { status: number; message: string } {
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

/** Runs `read` with `input`, its path parameters and query string checked first by its schemas. */
function readWith(request: FastifyRequest, ctx: PageContext): PageRead {
  const check = (part: 'params' | 'querystring', schema: object | undefined, value: object) => {
    if (!schema) return
    const validate = request.compileValidationSchema(schema as Record<string, unknown>, part)
    if (!validate(value)) throw badRequest(validationMessage(validate.errors ?? [], part))
  }
  return (read, input) => {
    check('params', read.schema.params, input.params as object)
    check('querystring', read.schema.querystring, input.query as object)
    return read.run(ctx.app.queries, input)
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
      const read = readWith(request, ctx)
      return sendPage(reply, 200, await render(await build({ params, query, read }, ctx)))
    } catch (err) {
      const { status, message } = messageOf(err, request)
      return sendError(reply, status, message)
    }
  })
}
