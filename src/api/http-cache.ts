import type { FastifyInstance } from 'fastify'
import { etagOf } from './answer-cache.ts'

// Conditional GETs: a weak ETag of the body (compression re-encodes it) and short max-ages,
// as ingestion changes answers every second and a takedown must not linger.

export interface CachePolicy {
  maxAge: number
}

declare module 'fastify' {
  interface FastifyContextConfig {
    cache?: CachePolicy
  }
}

export const LOOKUP_CACHE = { cache: { maxAge: 10 } }
export const LIST_CACHE = { cache: { maxAge: 5 } }

function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false
  if (ifNoneMatch.trim() === '*') return true
  const bare = etag.replace(/^W\//, '')
  return ifNoneMatch.split(',').some((t) => t.trim().replace(/^W\//, '') === bare)
}

/** Must be added before @fastify/compress registers, so it sees the uncompressed body. */
export function addCacheHeaders(app: FastifyInstance): void {
  app.addHook('onSend', async (request, reply, payload) => {
    const policy = request.routeOptions.config?.cache
    if (!policy || (request.method !== 'GET' && request.method !== 'HEAD')) return payload
    if (reply.statusCode !== 200) return payload
    // Strings, and the bytes of a cached answer (answer-cache.ts); streams pass untagged.
    if (typeof payload !== 'string' && !Buffer.isBuffer(payload)) return payload
    // A cached answer (answer-cache.ts) brings the tag it was stored with.
    const etag = (reply.getHeader('etag') as string | undefined) ?? etagOf(payload)
    reply.header('etag', etag)
    reply.header('cache-control', `public, max-age=${policy.maxAge}`)
    if (matches(request.headers['if-none-match'], etag)) {
      reply.code(304)
      return ''
    }
    return payload
  })
}
