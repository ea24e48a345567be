import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Database } from '../../db/client.ts'
import type { Nsids } from '../../model/nsids.ts'
import { UiError } from './api-client.ts'
import { type Html, render } from './html.ts'
import { errorPage } from './layout.ts'
import { type PageQuery, pageQuery } from './page-params.ts'

// Every page goes through `page`: the query is checked against the parameters the page
// takes, the page renders, and whatever fails becomes an HTML error page: the reader's
// mistakes as 400/404 naming the problem, an outage as 503, anything else as a plain 500
// whose details go to the log only (never a stack trace on the page).

export interface PageContext {
  app: FastifyInstance
  db: Database
  nsids: Nsids
}

export interface PageInput {
  params: Record<string, string>
  query: PageQuery
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
  if (err instanceof UiError && err.statusCode < 500)
    return { status: err.statusCode, message: err.message }
  if (err instanceof UiError && err.statusCode === 503)
    return { status: 503, message: `${err.message}; try again in a moment` }
  request.log.error({ err }, 'page failed')
  return { status: 500, message: 'the page could not be built; the error is in the server log' }
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
      return sendPage(reply, 200, await render(await build({ params, query }, ctx)))
    } catch (err) {
      const { status, message } = messageOf(err, request)
      return sendError(reply, status, message)
    }
  })
}
