import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyPluginAsync, FastifyRequest } from 'fastify'
import { applyBatch } from '../../indexer/apply.ts'
import { resolveActor } from '../catalog/define.ts'
import { badRequest, errorResponses, HttpError, notFound } from '../http-errors.ts'
import { parseActor } from '../params.ts'

export interface AdminOptions {
  token: string
  resyncRepo?: (did: string) => Promise<void>
}

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest()

/** Compares digests, so the inputs of timingSafeEqual have one length whatever was sent. */
function bearerMatches(header: string | undefined, expected: Buffer): boolean {
  const m = /^Bearer[ \t]+(\S.*)$/i.exec(header ?? '')
  const ok = timingSafeEqual(digest(m?.[1]?.trim() ?? ''), expected)
  return m !== null && ok
}

const repoActionSchema = (summary: string) => ({
  tags: ['admin'],
  summary,
  security: [{ bearer: [] }],
  // Parsed by the handler, which names what is wrong with a DID or handle.
  params: {
    type: 'object',
    properties: {
      did: {
        type: 'string',
        minLength: 1,
        maxLength: 2048,
        description: 'A DID, or a handle the index knows',
      },
    },
    required: ['did'],
  },
  response: {
    200: {
      type: 'object',
      properties: {
        did: { type: 'string' },
        hidden: { type: 'boolean' },
        resynced: { type: 'boolean' },
        changes: { type: 'integer' },
      },
      required: ['did'],
    },
    ...errorResponses,
  },
})

// Operator endpoints, only when ADMIN_TOKEN is set (else 404). Hide and unhide go through
// applyBatch like any event, so they take the writers' lock and the change log records them.
export const adminRoutes: FastifyPluginAsync<AdminOptions> = async (app, opts) => {
  const expected = digest(opts.token)
  const { db } = app.ctx

  // onRequest runs before parameter validation: without the token, nothing about the
  // request is answered, not even that its DID is malformed.
  app.addHook('onRequest', async (request, reply) => {
    if (!bearerMatches(request.headers.authorization, expected)) {
      reply.header('www-authenticate', 'Bearer')
      throw new HttpError(401, 'admin endpoints need Authorization: Bearer <ADMIN_TOKEN>')
    }
  })

  const didOf = async (request: FastifyRequest<{ Params: { did: string } }>): Promise<string> => {
    const actor = parseActor(request.params.did, 'did')
    const did = await resolveActor(db, actor)
    if (did === null)
      throw notFound(`handle ${request.params.did} is not known to this index; use the DID`)
    return did
  }

  for (const hidden of [true, false]) {
    app.post<{ Params: { did: string } }>(
      `/admin/repos/:did/${hidden ? 'hide' : 'unhide'}`,
      {
        schema: repoActionSchema(
          hidden
            ? "Hide a repo (the operator's takedown list)"
            : 'Show a repo hidden by the operator again',
        ),
      },
      async (request) => {
        const did = await didOf(request)
        const result = await applyBatch(app.ctx, [{ kind: 'operator-hide', did, hidden }], null)
        request.log.info({ did, hidden }, 'operator visibility change')
        return { did, hidden, changes: result.changes }
      },
    )
  }

  app.post<{ Params: { did: string } }>(
    '/admin/repos/:did/resync',
    { handlerTimeout: 600_000, schema: repoActionSchema('Re-fetch one repo and reconcile it') },
    async (request) => {
      const did = await didOf(request)
      if (!opts.resyncRepo)
        throw badRequest(
          'resync is not available in this process: run it where the indexer runs (prompt-appview run)',
        )
      try {
        await opts.resyncRepo(did)
      } catch (err) {
        request.log.error({ err, did }, 'resync failed')
        throw new HttpError(500, `resync of ${did} failed: ${(err as Error).message}`)
      }
      return { did, resynced: true }
    },
  )
}
