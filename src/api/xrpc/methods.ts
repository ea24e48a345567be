import type { FastifyInstance, FastifyReply } from 'fastify'
import type { ChangeFeed } from '../changes/feed.ts'
import { type CachePolicy, LIST_CACHE, LOOKUP_CACHE } from '../http-cache.ts'
import type { ListFilterQuery } from '../list-filters.ts'
import { parseActor, parseInclude, parseRecordUri, parseRkey } from '../params.ts'
import {
  agentLookup,
  promptSearch,
  repoLookup,
  revisionDetail,
  revisionDiff,
  revisionPage,
} from '../queries.ts'
import {
  revisionDetailSchema,
  revisionDiffSchema,
  revisionPageSchema,
} from '../revision-schemas.ts'
import { sendPrompt, sendPromptPage } from '../routes/prompts.ts'
import { sendConversation } from '../routes/records.ts'
import { repoSchema } from '../routes/repos.ts'
import { readStats } from '../routes/stats.ts'
import {
  agentSummarySchema,
  conversationSchema,
  promptPageSchema,
  promptSchema,
  searchPageSchema,
  statsSchema,
} from '../schemas.ts'
import { XRPC_NAMESPACE, type XrpcParams } from './lexicons.ts'

// What each XRPC query answers: the reads of the REST routes (queries.ts), called with the
// parameters the lexicon validated, as strings as REST's path and query string carry them,
// and parsed there by the same functions, so every visibility rule and every check is the
// REST one. Each answer is serialized by the JSON schema of its REST route, so the two carry
// the same JSON; prompts, prompt pages and conversations come through the REST routes' own
// functions, and so from the same answer cache entries (answer-cache-plugin.ts).

export interface XrpcMethod {
  /** The JSON schema of the REST answer: it serializes this one too, and documents it. */
  output: object
  cache: { cache: CachePolicy } | null
  handle(p: XrpcParams, reply: FastifyReply): Promise<unknown>
}

export const changesPageSchema = {
  type: 'object',
  properties: {
    changes: {
      type: 'array',
      description: 'The lines of GET /v1/changes for the same since, limit and include',
      items: { type: 'object', additionalProperties: true },
    },
    cursor: { type: 'integer', description: 'Pass as since for the next page' },
  },
  required: ['changes', 'cursor'],
} as const

/** An optional parameter as REST's query string carries it. */
const str = (v: unknown) => (v === undefined ? undefined : String(v))

/** The optional string parameters of a list, as REST's query string carries them. */
function listQuery(p: XrpcParams): ListFilterQuery {
  return {
    flag: str(p.flag),
    did: str(p.did),
    agent: str(p.agent),
    limit: str(p.limit),
    cursor: str(p.cursor),
  }
}

/** Stats in whole seconds: the atproto data model has no fractions (the lexicon says so). */
async function wholeSecondStats(app: FastifyInstance) {
  const stats = await readStats(app)
  const { lagSeconds } = stats.ingest
  return {
    ...stats,
    ingest: { ...stats.ingest, lagSeconds: lagSeconds === null ? null : Math.round(lagSeconds) },
  }
}

function changesMethod(feed: ChangeFeed): XrpcMethod {
  return {
    output: changesPageSchema,
    cache: null,
    async handle(p, reply) {
      const withRecords = parseInclude(str(p.include))
      const { lines, cursor } = await changesPage(
        feed,
        p.since as number,
        p.limit as number,
        withRecords,
      )
      // The lines are the feed's own JSON text (reads.ts changeLine), joined as they are.
      return reply
        .header('cache-control', 'no-store')
        .type('application/json; charset=utf-8')
        .send(`{"changes":[${lines.join(',')}],"cursor":${cursor}}`)
    },
  }
}

/**
 * The lines GET /v1/changes streams for `since`, `limit` and `include`, read by the same
 * feed (changes/feed.ts): changes of repos hidden now are left out (their rows still
 * move the cursor), and reads go on until `limit` lines or the end of the log, as the
 * stream's do. With records a page stops at one chunk of them: unlike the stream, a page
 * is held whole.
 */
async function changesPage(feed: ChangeFeed, since: number, limit: number, withRecords: boolean) {
  const most = withRecords ? Math.min(limit, feed.chunkSize(true)) : limit
  const lines: string[] = []
  let cursor = since
  for await (const page of feed.pages(since, most, withRecords)) {
    for (const line of page.lines) lines.push(line.trimEnd())
    cursor = page.cursor
  }
  return { lines, cursor }
}

/** `feed`: the change feed GET /v1/changes reads, shared so both page it alike. */
export function xrpcMethods(app: FastifyInstance, feed: ChangeFeed): Map<string, XrpcMethod> {
  const q = app.queries
  const { nsids } = q

  /** A lookup's path parameters, as REST's path carries them. */
  const keyOf = (p: XrpcParams) => ({ did: p.did as string, rkey: p.rkey as string })

  const methods: Record<string, XrpcMethod> = {
    getStats: { output: statsSchema, cache: LIST_CACHE, handle: () => wholeSecondStats(app) },
    getPrompt: {
      output: promptSchema,
      cache: LOOKUP_CACHE,
      handle: (p, reply) =>
        sendPrompt(app, reply, parseActor(p.did as string, 'did'), parseRkey(p.rkey as string)),
    },
    getPromptByUri: {
      output: promptSchema,
      cache: LOOKUP_CACHE,
      handle(p, reply) {
        const ref = parseRecordUri(p.uri as string, 'uri', [nsids.prompt, nsids.conversation])
        return sendPrompt(app, reply, ref.actor, ref.rkey)
      },
    },
    listPrompts: {
      output: promptPageSchema,
      cache: LIST_CACHE,
      handle: (p, reply) => sendPromptPage(app, reply, listQuery(p)),
    },
    searchPrompts: {
      output: searchPageSchema,
      cache: LIST_CACHE,
      handle: (p) =>
        promptSearch.run(q, { params: {}, query: { q: p.q as string, ...listQuery(p) } }),
    },
    getPromptRevisions: {
      output: revisionPageSchema,
      cache: LOOKUP_CACHE,
      handle: (p) =>
        revisionPage.run(q, {
          params: keyOf(p),
          query: { limit: String(p.limit), cursor: p.cursor as string | undefined },
        }),
    },
    getPromptRevision: {
      output: revisionDetailSchema,
      cache: LOOKUP_CACHE,
      handle: (p) =>
        revisionDetail.run(q, { params: { ...keyOf(p), rev: p.rev as string }, query: {} }),
    },
    getPromptDiff: {
      output: revisionDiffSchema,
      cache: LOOKUP_CACHE,
      handle: (p) =>
        revisionDiff.run(q, { params: keyOf(p), query: { from: str(p.from), to: str(p.to) } }),
    },
    getConversation: {
      output: conversationSchema,
      cache: LOOKUP_CACHE,
      handle: (p, reply) => sendConversation(app, reply, keyOf(p)),
    },
    getAgent: {
      output: agentSummarySchema,
      cache: LOOKUP_CACHE,
      handle: (p) => agentLookup.run(q, { params: keyOf(p), query: {} }),
    },
    getRepo: {
      output: repoSchema,
      cache: LOOKUP_CACHE,
      handle: (p) => repoLookup.run(q, { params: { did: p.did as string }, query: {} }),
    },
    getChanges: changesMethod(feed),
  }

  return new Map(Object.entries(methods).map(([name, m]) => [`${XRPC_NAMESPACE}.${name}`, m]))
}
