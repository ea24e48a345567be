import { fileURLToPath } from 'node:url'
import helmet from '@fastify/helmet'
import fastifyStatic from '@fastify/static'
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { nsidsOf } from '../../config/config.ts'
import { LIST_PARAMS, listPage } from './list-page.ts'
import { overviewPage } from './overview-page.ts'
import { type PageContext, page, sendError } from './page-route.ts'
import { PROMPT_PARAMS, promptPage } from './prompt-page.ts'
import { agentPage, conversationPage, repoPage } from './record-pages.ts'

// The browse UI (SPEC section 6): an encapsulated plugin, so its strict CSP applies to its
// pages and assets only, not to the JSON API and /docs.

/** This origin only: no inline script or style, no plugins, no framing, forms only to here. */
const CSP_DIRECTIVES = {
  'default-src': ["'none'"],
  'script-src': ["'self'"],
  'style-src': ["'self'"],
  'img-src': ["'self'"],
  'connect-src': ["'self'"],
  'form-action': ["'self'"],
  'frame-ancestors': ["'none'"],
  'base-uri': ["'none'"],
  'object-src': ["'none'"],
} as const

const CSP_HEADER = Object.entries(CSP_DIRECTIVES)
  .map(([k, v]) => `${k} ${v.join(' ')}`)
  .join('; ')

const ASSETS = fileURLToPath(new URL('./assets/', import.meta.url))

export const uiRoutes: FastifyPluginAsync = async (app) => {
  await app.register(helmet, {
    contentSecurityPolicy: { useDefaults: false, directives: CSP_DIRECTIVES },
    // Only pages of this origin are linked; a referrer would leak the filters of a link.
    referrerPolicy: { policy: 'same-origin' },
  })
  await app.register(fastifyStatic, {
    root: ASSETS,
    prefix: '/assets/',
    index: false,
    list: false,
    dotfiles: 'deny',
    maxAge: 300_000,
  })
  const ctx: PageContext = { app, db: app.ctx.db, nsids: nsidsOf(app.ctx.config) }
  page(ctx, '/', [], overviewPage)
  page(ctx, '/prompts', LIST_PARAMS, listPage)
  page(ctx, '/prompts/:did/:rkey', PROMPT_PARAMS, promptPage)
  page(ctx, '/conversations/:did/:rkey', [], conversationPage)
  page(ctx, '/agents/:did/:rkey', [], agentPage)
  page(ctx, '/repos/:did', [], repoPage)
}

/** Whether a browser asked: such requests get HTML error pages instead of JSON. */
export function wantsHtml(request: FastifyRequest): boolean {
  const accept = request.headers.accept ?? ''
  const path = request.url.split('?')[0] ?? ''
  return (
    accept.includes('text/html') &&
    !/^\/(v1|admin|metrics|healthz|readyz|openapi\.json|xrpc)(\/|$)/.test(path)
  )
}

/** An HTML error page outside the UI's own routes (unknown paths, malformed URLs). */
export async function sendHtmlError(
  reply: FastifyReply,
  status: number,
  message: string,
): Promise<FastifyReply> {
  reply.header('content-security-policy', CSP_HEADER)
  reply.header('x-content-type-options', 'nosniff')
  reply.header('x-frame-options', 'DENY')
  return sendError(reply, status, message)
}
