import type { FastifyInstance, FastifyReply } from 'fastify'
import { nsidsOf } from '../../config.ts'
import { type ChangeRow, readChanges } from '../../db/read/changes.ts'
import { batchedPromptAnswers } from '../../db/read/prompts.ts'
import { getIngestStatus } from '../../db/read/stats.ts'
import { readVisibleCounts } from '../../db/read/visible-counts.ts'
import { getRepoView } from '../../db/repo-chain.ts'
import { serializerFor } from '../answer-cache-plugin.ts'
import { type CachePolicy, LIST_CACHE, LOOKUP_CACHE } from '../http-cache.ts'
import { notFound } from '../http-errors.ts'
import { type ListFilterQuery, parseListFilters } from '../list-filters.ts'
import {
  type Actor,
  decodeRevCursor,
  PAGE_LIMIT,
  parseActor,
  parseRecordUri,
  parseRkey,
} from '../params.ts'
import { spliceRecord } from '../raw-record.ts'
import {
  changeLine,
  getAgentSummary,
  getConversation,
  getPromptAnswer,
  listPrompts,
  type PromptAnswer,
  resolveActor,
} from '../reads.ts'
import { getRevisionDetail, getRevisionDiff, getRevisions } from '../revision-reads.ts'
import {
  revisionDetailSchema,
  revisionDiffSchema,
  revisionPageSchema,
} from '../revision-schemas.ts'
import { repoSchema } from '../routes/repos.ts'
import {
  agentSummarySchema,
  conversationSchema,
  promptPageSchema,
  promptSchema,
  searchPageSchema,
  statsSchema,
} from '../schemas.ts'
import { searchPrompts, searchWords } from '../search-reads.ts'
import { XRPC_NAMESPACE, type XrpcParams } from './lexicons.ts'

// What each XRPC query answers: the read functions of the REST routes (reads.ts,
// revision-reads.ts, search-reads.ts, db/read/), called with the parameters the lexicon
// validated and then parsed by the same functions as REST's (params.ts, list-filters.ts),
// so every visibility rule and every check is the REST one. Each answer is serialized by the
// JSON schema of its REST route, so the two carry the same JSON.

export interface XrpcMethod {
  /** The JSON schema of the REST answer: it serializes this one too, and documents it. */
  output: object
  cache: { cache: CachePolicy } | null
  handle(p: XrpcParams, reply: FastifyReply): Promise<unknown>
}

/** Changes per read of a getChanges page (its limit is at most 1000). */
const CHANGES_CHUNK = 500

export const changesPageSchema = {
  type: 'object',
  properties: {
    changes: {
      type: 'array',
      description: 'The lines of GET /v1/changes for the same since and limit',
      items: { type: 'object', additionalProperties: true },
    },
    cursor: { type: 'integer', description: 'Pass as since for the next page' },
  },
  required: ['changes', 'cursor'],
} as const

/** The optional string parameters of a list, as REST's query string carries them. */
function listQuery(p: XrpcParams): ListFilterQuery {
  const s = (v: unknown) => (v === undefined ? undefined : String(v))
  return {
    flag: s(p.flag),
    did: s(p.did),
    agent: s(p.agent),
    limit: s(p.limit),
    cursor: s(p.cursor),
  }
}

export function xrpcMethods(app: FastifyInstance): Map<string, XrpcMethod> {
  const { db, config } = app.ctx
  const nsids = nsidsOf(config)
  const readAnswerRow = batchedPromptAnswers(db)

  /** A lookup's repo: a handle the index does not know is as absent as a missing record. */
  const repoOf = async (actor: Actor, what: string): Promise<string> => {
    const did = await resolveActor(db, actor)
    if (did === null)
      throw notFound(
        `no such ${what}: handle ${actor.kind === 'handle' ? actor.handle : ''} is not known to this index`,
      )
    return did
  }
  /** `did` and `rkey` of a lookup, the repo resolved. */
  const keyOf = async (p: XrpcParams, what: string) => {
    const actor = parseActor(p.did as string, 'did')
    const rkey = parseRkey(p.rkey as string)
    return { did: await repoOf(actor, what), rkey }
  }

  /** One prompt's answer: the record's stored JSON spliced into the REST serialization. */
  const sendPrompt = async (reply: FastifyReply, actor: Actor, rkey: string) => {
    const did = await repoOf(actor, 'prompt')
    const answer = await getPromptAnswer(readAnswerRow, nsids, did, rkey)
    if (!answer) throw notFound(`no prompt at at://${did}/${nsids.prompt}/${rkey}`)
    const body = spliceRecord<PromptAnswer>(serializerFor(reply, promptSchema))(answer)
    return reply.type('application/json; charset=utf-8').send(body)
  }

  const methods: Record<string, XrpcMethod> = {
    getStats: {
      output: statsSchema,
      cache: LIST_CACHE,
      async handle() {
        const ingest = app.apiOptions.ingest
        const [counts, status] = await Promise.all([
          readVisibleCounts(db),
          getIngestStatus(db, ingest?.source ?? null, ingest?.key ?? null),
        ])
        // The atproto data model has no fractions: whole seconds (the lexicon says so).
        const lagSeconds = status.lagSeconds === null ? null : Math.round(status.lagSeconds)
        return { ...counts, ingest: { ...status, lagSeconds, gap: ingest?.gap?.() ?? null } }
      },
    },
    getPrompt: {
      output: promptSchema,
      cache: LOOKUP_CACHE,
      handle: (p, reply) =>
        sendPrompt(reply, parseActor(p.did as string, 'did'), parseRkey(p.rkey as string)),
    },
    getPromptByUri: {
      output: promptSchema,
      cache: LOOKUP_CACHE,
      handle(p, reply) {
        const ref = parseRecordUri(p.uri as string, 'uri', [nsids.prompt, nsids.conversation])
        return sendPrompt(reply, ref.actor, ref.rkey)
      },
    },
    listPrompts: {
      output: promptPageSchema,
      cache: LIST_CACHE,
      async handle(p) {
        const parsed = await parseListFilters(db, nsids, listQuery(p))
        if (!parsed) return { items: [] }
        return listPrompts(db, nsids, parsed.filters, parsed.limit)
      },
    },
    searchPrompts: {
      output: searchPageSchema,
      cache: LIST_CACHE,
      async handle(p) {
        const words = searchWords(p.q as string)
        const parsed = await parseListFilters(db, nsids, listQuery(p))
        if (!parsed) return { items: [] }
        return searchPrompts(db, nsids, { words, ...parsed.filters }, parsed.limit)
      },
    },
    getPromptRevisions: {
      output: revisionPageSchema,
      cache: LOOKUP_CACHE,
      async handle(p) {
        const actor = parseActor(p.did as string, 'did')
        const rkey = parseRkey(p.rkey as string)
        const limit = PAGE_LIMIT.parse(String(p.limit))
        const before = p.cursor === undefined ? null : decodeRevCursor(p.cursor as string)
        const did = await repoOf(actor, 'prompt')
        const page = await getRevisions(db, did, rkey, before, limit)
        if (!page) throw notFound(`no prompt at at://${did}/${nsids.prompt}/${rkey}`)
        return { uri: `at://${did}/${nsids.prompt}/${rkey}`, ...page }
      },
    },
    getPromptRevision: {
      output: revisionDetailSchema,
      cache: LOOKUP_CACHE,
      async handle(p) {
        const rev = parseRkey(p.rev as string, 'rev')
        const { did, rkey } = await keyOf(p, 'prompt')
        return getRevisionDetail(db, nsids, did, rkey, rev)
      },
    },
    getPromptDiff: {
      output: revisionDiffSchema,
      cache: LOOKUP_CACHE,
      async handle(p) {
        const from = p.from === undefined ? null : parseRkey(p.from as string, 'from')
        const to = p.to === undefined ? null : parseRkey(p.to as string, 'to')
        const { did, rkey } = await keyOf(p, 'prompt')
        return getRevisionDiff(db, nsids, did, rkey, from, to)
      },
    },
    getConversation: {
      output: conversationSchema,
      cache: LOOKUP_CACHE,
      async handle(p) {
        const { did, rkey } = await keyOf(p, 'conversation')
        const view = await getConversation(db, nsids, did, rkey)
        if (!view) throw notFound(`no conversation at at://${did}/${nsids.conversation}/${rkey}`)
        return view
      },
    },
    getAgent: {
      output: agentSummarySchema,
      cache: LOOKUP_CACHE,
      async handle(p) {
        const { did, rkey } = await keyOf(p, 'agent')
        const summary = await getAgentSummary(db, nsids, did, rkey)
        if (!summary)
          throw notFound(`no agent at at://${did}/${nsids.agent}/${rkey}, and no prompt names it`)
        return summary
      },
    },
    getRepo: {
      output: repoSchema,
      cache: LOOKUP_CACHE,
      async handle(p) {
        const did = await repoOf(parseActor(p.did as string, 'did'), 'repo')
        const view = await getRepoView(db, did)
        if (!view) throw notFound(`repo ${did} is not tracked by this index`)
        return view
      },
    },
    getChanges: {
      output: changesPageSchema,
      cache: null,
      async handle(p, reply) {
        const { lines, cursor } = await changesPage(p.since as number, p.limit as number)
        // The lines are the feed's own JSON text (reads.ts changeLine), joined as they are.
        return reply
          .header('cache-control', 'no-store')
          .type('application/json; charset=utf-8')
          .send(`{"changes":[${lines.join(',')}],"cursor":${cursor}}`)
      },
    },
  }

  /**
   * The lines GET /v1/changes streams for `since` and `limit`: changes of repos hidden now
   * are left out (their rows still move the cursor), and reads go on until `limit` lines or
   * the end of the log, as the stream's do.
   */
  async function changesPage(since: number, limit: number) {
    const lines: string[] = []
    let cursor = since
    for (;;) {
      const asked = Math.min(CHANGES_CHUNK, limit - lines.length)
      const rows: ChangeRow[] = await readChanges(db, cursor, asked)
      for (const row of rows) {
        cursor = row.seq
        if (!row.withheld) lines.push(changeLine(row, config.promptNsid).trimEnd())
      }
      if (rows.length < asked || lines.length >= limit) return { lines, cursor }
    }
  }

  return new Map(Object.entries(methods).map(([name, m]) => [`${XRPC_NAMESPACE}.${name}`, m]))
}
