import type { AppContext } from '../context/context.ts'
import { batchedPromptAnswers } from '../db/read/prompts.ts'
import { getRepoView, type RepoView } from '../db/repo-chain.ts'
import { notFound } from './http-errors.ts'
import { type ListFilterQuery, listFilterProperties, parseListFilters } from './list-filters.ts'
import { type Actor, decodeRevCursor, PAGE_LIMIT, parseActor, parseRkey } from './params.ts'
import type { PromptListItem } from './prompt-views.ts'
import type { RawRecordAnswer } from './raw-record.ts'
import {
  type AgentSummary,
  type ConversationView,
  getAgentSummary,
  getConversation,
  getPromptAnswer,
  listPrompts,
  type PromptAnswer,
  type PromptAnswerReader,
  resolveActor,
} from './reads.ts'
import {
  getRevisionDetail,
  getRevisionDiff,
  getRevisions,
  type RevisionDetail,
  type RevisionDiff,
  type RevisionView,
} from './revision-reads.ts'
import { revParam } from './revision-schemas.ts'
import { cursorParam, type RepoRkey, repoParam, repoRkeyParams, rkeyParam } from './schemas.ts'
import { type SearchItem, searchPrompts, searchWords } from './search-reads.ts'

// The reads of SPEC section 6 as functions of a request's parameters, as its path and query
// string carry them (strings): each parses them (a 400 naming the first bad one), resolves a
// handle, reads and shapes the answer, or throws the HttpError the API answers with (a 404
// for what is absent or hidden). The REST routes, the XRPC methods (xrpc/methods.ts) and
// the browse UI (ui/) all call these, so the three say the same thing about the same
// request; the routes add their answer cache and serializers around them.
//
// `schema` is what the REST route checks the same parameters with before its handler runs
// (Ajv's 400 names the part): the route declares it, and a UI page checks its parameters
// with it too, so a page's 400 is the API's.

/** What the reads read with: the database, the NSIDs, and one batched prompt reader. */
export interface QueryContext {
  readonly db: AppContext['db']
  readonly nsids: AppContext['nsids']
  /** Prompt lookups that arrive together share a statement (db/read/batch.ts). */
  readonly readPrompt: PromptAnswerReader
}

declare module 'fastify' {
  interface FastifyInstance {
    /** One per app: the REST routes, the XRPC methods and the UI pages read through it. */
    queries: QueryContext
  }
}

export function queryContext(ctx: Pick<AppContext, 'db' | 'nsids'>): QueryContext {
  return { db: ctx.db, nsids: ctx.nsids, readPrompt: batchedPromptAnswers(ctx.db) }
}

/** A read's parameters as a request carries them: its path's and its query string's. */
export interface ReadInput<P, Q> {
  params: P
  query: Q
}

type None = Record<string, never>

export interface Read<P, Q, T> {
  /** JSON schemas of the path parameters and the query string, as the REST route has them. */
  readonly schema: { readonly params?: object; readonly querystring?: object }
  readonly run: (c: QueryContext, input: ReadInput<P, Q>) => Promise<T>
}

/** A lookup's repo: a handle the index does not know is as absent as a missing record. */
export async function repoOf(c: QueryContext, actor: Actor, what: string): Promise<string> {
  const did = await resolveActor(c.db, actor)
  if (did === null)
    throw notFound(
      `no such ${what}: handle ${actor.kind === 'handle' ? actor.handle : ''} is not known to this index`,
    )
  return did
}

/** `did` (resolved) and `rkey` of a lookup by repo and record key. */
export async function lookupKey(
  c: QueryContext,
  params: RepoRkey,
  what: string,
): Promise<{ did: string; rkey: string }> {
  const actor = parseActor(params.did, 'did')
  const rkey = parseRkey(params.rkey)
  return { did: await repoOf(c, actor, what), rkey }
}

const noPrompt = (c: QueryContext, did: string, rkey: string) =>
  notFound(`no prompt at at://${did}/${c.nsids.prompt}/${rkey}`)

/** One prompt's answer with its record as stored JSON text (raw-record.ts), or a 404. */
export async function promptAnswer(
  c: QueryContext,
  did: string,
  rkey: string,
): Promise<RawRecordAnswer<PromptAnswer>> {
  const answer = await getPromptAnswer(c.readPrompt, c.nsids, did, rkey)
  if (!answer) throw noPrompt(c, did, rkey)
  return answer
}

/** GET /v1/prompts/{did}/{rkey}, with the record parsed. */
export const promptLookup: Read<RepoRkey, None, PromptAnswer> = {
  schema: { params: repoRkeyParams },
  async run(c, { params }) {
    const { did, rkey } = await lookupKey(c, params, 'prompt')
    const { answer, recordJson } = await promptAnswer(c, did, rkey)
    return { ...answer, record: JSON.parse(recordJson.toString()) }
  },
}

export interface Page<T> {
  items: T[]
  cursor?: string
}

const filterSchema = { type: 'object', properties: listFilterProperties } as const

/** GET /v1/prompts without `uri`: a page of prompts (the route caches the parsed filters' page). */
export const promptList: Read<None, ListFilterQuery, Page<PromptListItem>> = {
  schema: { querystring: filterSchema },
  async run(c, { query }) {
    const parsed = await parseListFilters(c.db, c.nsids, query)
    // A handle nobody here has names no prompts: an empty page, like an unknown DID.
    if (!parsed) return { items: [] }
    return listPrompts(c.db, c.nsids, parsed.filters, parsed.limit)
  },
}

/** Queries longer than this are refused: nobody types them, and each word costs a probe. */
const MAX_QUERY_CHARS = 1000

export interface SearchQuery extends ListFilterQuery {
  q: string
}

/** GET /v1/search: the words of q, then a page with the filters, order and paging of a list. */
export const promptSearch: Read<None, SearchQuery, Page<SearchItem>> = {
  schema: {
    querystring: {
      type: 'object',
      properties: {
        q: {
          type: 'string',
          minLength: 1,
          maxLength: MAX_QUERY_CHARS,
          description: 'words to find',
        },
        ...listFilterProperties,
      },
      required: ['q'],
    },
  },
  async run(c, { query }) {
    const words = searchWords(query.q)
    const parsed = await parseListFilters(c.db, c.nsids, query)
    if (!parsed) return { items: [] }
    return searchPrompts(c.db, c.nsids, { words, ...parsed.filters }, parsed.limit)
  },
}

export type RevisionPage = Page<RevisionView> & { uri: string }

/** GET /v1/prompts/{did}/{rkey}/revisions: a page of one prompt's revisions, newest first. */
export const revisionPage: Read<RepoRkey, { limit?: string; cursor?: string }, RevisionPage> = {
  schema: {
    params: repoRkeyParams,
    querystring: { type: 'object', properties: { limit: PAGE_LIMIT.schema, cursor: cursorParam } },
  },
  async run(c, { params, query }) {
    const actor = parseActor(params.did, 'did')
    const rkey = parseRkey(params.rkey)
    const limit = PAGE_LIMIT.parse(query.limit)
    const before = query.cursor === undefined ? null : decodeRevCursor(query.cursor)
    const did = await repoOf(c, actor, 'prompt')
    const page = await getRevisions(c.db, did, rkey, before, limit)
    if (!page) throw noPrompt(c, did, rkey)
    return { uri: `at://${did}/${c.nsids.prompt}/${rkey}`, ...page }
  },
}

/** GET /v1/prompts/{did}/{rkey}/revisions/{rev}: one revision with its texts. */
export const revisionDetail: Read<RepoRkey & { rev: string }, None, RevisionDetail> = {
  schema: {
    params: {
      type: 'object',
      properties: { did: repoParam, rkey: rkeyParam, rev: revParam },
      required: ['did', 'rkey', 'rev'],
    },
  },
  async run(c, { params }) {
    const rkey = parseRkey(params.rkey)
    const rev = parseRkey(params.rev, 'rev')
    const did = await repoOf(c, parseActor(params.did, 'did'), 'prompt')
    return getRevisionDetail(c.db, c.nsids, did, rkey, rev)
  },
}

/** GET /v1/prompts/{did}/{rkey}/diff: the line diff between two revisions of one prompt. */
export const revisionDiff: Read<RepoRkey, { from?: string; to?: string }, RevisionDiff> = {
  schema: {
    params: repoRkeyParams,
    querystring: {
      type: 'object',
      properties: {
        from: { ...revParam, description: 'older revision (default: the one before to)' },
        to: { ...revParam, description: 'newer revision (default: the newest)' },
      },
    },
  },
  async run(c, { params, query }) {
    const rkey = parseRkey(params.rkey)
    const from = query.from === undefined ? null : parseRkey(query.from, 'from')
    const to = query.to === undefined ? null : parseRkey(query.to, 'to')
    const did = await repoOf(c, parseActor(params.did, 'did'), 'prompt')
    return getRevisionDiff(c.db, c.nsids, did, rkey, from, to)
  },
}

/** One conversation with the prompt in its slot, or a 404 (the route caches it by key). */
export async function conversationAt(
  c: QueryContext,
  { did, rkey }: { did: string; rkey: string },
): Promise<ConversationView> {
  const view = await getConversation(c.db, c.nsids, did, rkey)
  if (!view) throw notFound(`no conversation at at://${did}/${c.nsids.conversation}/${rkey}`)
  return view
}

/** GET /v1/conversations/{did}/{rkey}. */
export const conversationLookup: Read<RepoRkey, None, ConversationView> = {
  schema: { params: repoRkeyParams },
  run: async (c, { params }) => conversationAt(c, await lookupKey(c, params, 'conversation')),
}

/** GET /v1/agents/{did}/{rkey}: the agent record and counts of the visible prompts naming it. */
export const agentLookup: Read<RepoRkey, None, AgentSummary> = {
  schema: { params: repoRkeyParams },
  async run(c, { params }) {
    const { did, rkey } = await lookupKey(c, params, 'agent')
    const summary = await getAgentSummary(c.db, c.nsids, did, rkey)
    if (!summary)
      throw notFound(`no agent at at://${did}/${c.nsids.agent}/${rkey}, and no prompt names it`)
    return summary
  },
}

/** GET /v1/repos/{did}: a tracked repo's account status, sync state and record counts. */
export const repoLookup: Read<{ did: string }, None, RepoView> = {
  schema: {
    params: {
      type: 'object',
      properties: { did: { type: 'string', description: 'A DID or a handle' } },
      required: ['did'],
    },
  },
  async run(c, { params }) {
    const did = await repoOf(c, parseActor(params.did, 'did'), 'repo')
    const view = await getRepoView(c.db, did)
    if (!view) throw notFound(`repo ${did} is not tracked by this index`)
    return view
  },
}
