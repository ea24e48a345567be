import { FILTER_NAMES, FLAG_NAMES } from '../model/flags.ts'
import { DECIMAL_PATTERN } from './http-errors.ts'

// JSON schemas of the API: they validate input, drive fast serialization and become the
// OpenAPI document. Records are arbitrary JSON, so their schemas are left open (`{}`
// serializes with JSON.stringify): a closed schema would silently strip fields.

const str = { type: 'string' } as const
const nullableStr = { type: ['string', 'null'] } as const
const int = { type: 'integer' } as const
const record = { description: 'The record as published (arbitrary JSON)' } as const

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

const flagList = { type: 'array', items: { type: 'string', enum: FLAG_NAMES } } as const

const promptProperties = {
  uri: str,
  cid: str,
  did: str,
  rkey: str,
  rev: str,
  record,
  flags: flagList,
  conversation: {
    type: 'object',
    properties: { uri: str, exists: { type: 'boolean' } },
    required: ['uri', 'exists'],
  },
  agent: {
    type: 'object',
    properties: { uri: nullableStr, exists: { type: 'boolean' } },
    required: ['uri', 'exists'],
  },
  recompiles: int,
  indexedAt: { type: 'string', format: 'date-time' },
  validationError: nullableStr,
  provenance: {
    type: 'object',
    description:
      'How the record was obtained: source, whether its commit was verified, commit CID and rev',
    properties: {
      source: {
        type: ['string', 'null'],
        enum: ['firehose', 'jetstream', 'backfill', 'replay', null],
      },
      verified: { type: 'boolean' },
      commit: nullableStr,
      rev: str,
    },
    required: ['source', 'verified', 'commit', 'rev'],
  },
} as const
const promptRequired = Object.keys(promptProperties)

const reasonsSchema = {
  type: 'object',
  description:
    'One plain-language sentence per flag set, naming its evidence; the keys are exactly `flags`',
  properties: Object.fromEntries(FLAG_NAMES.map((f) => [f, str])),
  additionalProperties: false,
} as const

export const promptSchema = {
  type: 'object',
  description: 'One compiledPrompt with its flags and their reasons',
  properties: { ...promptProperties, reasons: reasonsSchema },
  required: [...promptRequired, 'reasons'],
} as const

export const promptListItemSchema = {
  type: 'object',
  description: 'A prompt in a list: the record without content and coreMemory',
  properties: { ...promptProperties, contentBytes: { type: ['integer', 'null'] } },
  required: [...promptRequired, 'contentBytes'],
} as const

export const promptPageSchema = {
  type: 'object',
  properties: {
    items: { type: 'array', items: promptListItemSchema },
    cursor: { type: 'string', description: 'Pass back for the next page; absent on the last page' },
  },
  required: ['items'],
} as const

export const conversationSchema = {
  type: 'object',
  properties: {
    uri: str,
    cid: str,
    did: str,
    rkey: str,
    record,
    prompt: {
      type: ['object', 'null'],
      properties: { uri: str, flags: flagList },
      required: ['uri', 'flags'],
    },
  },
  required: ['uri', 'cid', 'did', 'rkey', 'record', 'prompt'],
} as const

const flagCountProperties = Object.fromEntries([...FILTER_NAMES].map((f) => [f, int]))

export const agentSummarySchema = {
  type: 'object',
  properties: {
    uri: str,
    agent: { description: 'The agent record, or null when it is not indexed' },
    prompts: {
      type: 'object',
      description: 'Visible prompts naming this agent: total, per flag, and ok',
      properties: { total: int, ...flagCountProperties },
      required: ['total', ...FILTER_NAMES],
    },
  },
  required: ['uri', 'agent', 'prompts'],
} as const

/** A hole the source left in the stream (Jetstream CursorTooOld / OutdatedCursor): backfill. */
export const ingestGapSchema = {
  type: ['object', 'null'],
  properties: {
    reason: { type: 'string' },
    at: { type: 'string' },
    cursor: { type: ['integer', 'null'] },
    message: { type: 'string' },
    action: { type: 'string' },
  },
  required: ['reason', 'at', 'cursor', 'message', 'action'],
} as const

export const statsSchema = {
  type: 'object',
  properties: {
    prompts: int,
    conversations: int,
    agents: int,
    flags: { type: 'object', properties: flagCountProperties, required: [...FILTER_NAMES] },
    ingest: {
      type: 'object',
      properties: {
        source: nullableStr,
        cursor: { type: ['integer', 'null'] },
        lagSeconds: { type: ['number', 'null'] },
        lastEventAt: nullableStr,
        gap: ingestGapSchema,
      },
      required: ['source', 'cursor', 'lagSeconds', 'lastEventAt'],
    },
  },
  required: ['prompts', 'conversations', 'agents', 'flags', 'ingest'],
} as const

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

/**
 * The syntax of an integer in a query string: plain decimal digits, not coerced by Ajv, which
 * would take `0x10`, `1e2`, `+5` or ` 5`. Range and default: params.ts IntegerParam.
 */
export const decimalParam = (description: string) =>
  ({ type: 'string', pattern: DECIMAL_PATTERN, maxLength: 16, description }) as const
export const searchPageSchema = {
  type: 'object',
  properties: {
    items: {
      type: 'array',
      items: {
        ...promptListItemSchema,
        description: 'A prompt in a list, with a snippet of content around the first match',
        properties: {
          ...promptListItemSchema.properties,
          snippet: {
            type: 'object',
            properties: {
              text: { type: 'string', description: 'Plain text (escape it to show it as HTML)' },
              matches: {
                type: 'array',
                description: 'Where the words of q occur in text: UTF-16 offsets [start, end)',
                items: {
                  type: 'object',
                  properties: { start: int, end: int },
                  required: ['start', 'end'],
                },
              },
            },
            required: ['text', 'matches'],
          },
        },
        required: [...promptListItemSchema.required, 'snippet'],
      },
    },
    cursor: promptPageSchema.properties.cursor,
  },
  required: ['items'],
} as const

export const repoSchema = {
  type: 'object',
  description:
    'A tracked repo: account status, sync state (null before the verified firehose saw it), visible record counts',
  properties: {
    did: { type: 'string' },
    handle: nullableStr,
    account: {
      type: 'object',
      properties: { active: { type: 'boolean' }, status: nullableStr, hidden: { type: 'boolean' } },
      required: ['active', 'status', 'hidden'],
    },
    sync: {
      type: 'object',
      properties: {
        state: {
          type: ['string', 'null'],
          enum: ['synchronized', 'desynchronized', 'resyncing', null],
        },
        rev: nullableStr,
        reason: nullableStr,
        since: { type: ['string', 'null'], format: 'date-time' },
      },
      required: ['state', 'rev', 'reason', 'since'],
    },
    records: {
      type: 'object',
      properties: { prompts: int, conversations: int, agents: int },
      required: ['prompts', 'conversations', 'agents'],
    },
  },
  required: ['did', 'handle', 'account', 'sync', 'records'],
} as const
