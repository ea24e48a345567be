import { defSchema } from './catalog/output-schema.ts'

// The JSON schemas of the API that no query lexicon declares: the error shape every route
// answers with, and what the operations routes use. The reads' answers are their lexicons'
// (catalog/output-schema.ts).

const str = { type: 'string' } as const

export const errorSchema = {
  type: 'object',
  properties: {
    error: {
      type: 'string',
      description: 'InvalidRequest, NotFound, AuthRequired, RateLimitExceeded, InternalServerError',
    },
    message: str,
  },
  required: ['error', 'message'],
} as const

/** 4xx and 5xx answers of every route share the error shape. */
export const errorResponses = { '4xx': errorSchema, '5xx': errorSchema } as const

/** A hole the source left in the stream (Jetstream CursorTooOld / OutdatedCursor): backfill. */
export const ingestGapSchema = defSchema('xyz.quasigod.lab.letta.appview.defs#ingestGap', true)

/** A repo in a path: parsed by the handler, which names what is wrong with a DID or handle. */
export const repoParam = {
  type: 'string',
  minLength: 1,
  maxLength: 2048,
  description: 'A DID, or a handle the index knows',
} as const

/** The options of an operations route: exempt from the rate limit, for load balancers and scrapers. */
export function opsRoute(summary: string, schema: Record<string, unknown>) {
  return { config: { rateLimit: false }, schema: { tags: ['ops'], summary, ...schema } }
}
