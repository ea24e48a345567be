import { getStats } from '../../db/read/stats.ts'
import { getRepoView } from '../../db/repo-chain.ts'
import { ANY_REPO } from '../answer-cache.ts'
import { LIST_CACHE, LOOKUP_CACHE } from '../http-cache.ts'
import { notFound } from '../http-errors.ts'
import { type ListFilterParams, parseListFilters } from '../list-filters.ts'
import { type Actor, decodeRevCursor, parseActor, parseRecordUri } from '../params.ts'
import type { PromptListItem } from '../prompt-views.ts'
import { type RawRecordAnswer, spliceRecord } from '../raw-record.ts'
import {
  getAgentSummary,
  getConversation,
  getPromptAnswer,
  listPrompts,
  type PromptAnswer,
  resolveActor,
} from '../reads.ts'
import { getRevisionDetail, getRevisionDiff, getRevisions } from '../revision-reads.ts'
import { type SearchItem, searchPrompts, searchWords } from '../search-reads.ts'
import { defineRead, type ReadContext } from './define.ts'
import { XRPC_NAMESPACE } from './lexicons.ts'
import { outputSchema } from './output-schema.ts'

// Every read of SPEC section 6, once. Parameters arrive checked by their lexicon
// (lexicons.ts checkParams); `plan` parses what a lexicon cannot know (cursors, which
// collection an at-uri names) and resolves handles, so a key is what the cache is keyed by.

/** A page of a list, and the cursor of the next when there is one. */
interface Page<T> {
  items: T[]
  cursor?: string
}

/** A lookup's repo: a handle the index does not know is as absent as a missing record. */
async function repoOf(c: ReadContext, actor: Actor, what: string): Promise<string> {
  const did = await resolveActor(c.db, actor)
  if (did === null)
    throw notFound(
      `no such ${what}: handle ${actor.kind === 'handle' ? actor.handle : ''} is not known to this index`,
    )
  return did
}

interface RecordParams {
  did: string
  rkey: string
}
interface RecordKey {
  did: string
  rkey: string
}

/** The resolved repo and record key of a lookup by repo and record key. */
const recordKey = async (c: ReadContext, p: RecordParams, what: string): Promise<RecordKey> => ({
  did: await repoOf(c, parseActor(p.did, 'did'), what),
  rkey: p.rkey,
})

const noPrompt = (c: ReadContext, { did, rkey }: RecordKey) =>
  notFound(`no prompt at at://${did}/${c.nsids.prompt}/${rkey}`)

/** The repos a prompt's answer is built from: its own, and its agent's (agent.exists, reasons). */
function promptRepos({ answer }: RawRecordAnswer<PromptAnswer>): string[] {
  const agentRepo = answer.agent.uri?.startsWith('at://')
    ? answer.agent.uri.slice(5).split('/')[0]
    : null
  return agentRepo && agentRepo !== answer.did ? [answer.did, agentRepo] : [answer.did]
}

/** One prompt's answer with its record as stored JSON text (raw-record.ts), or a 404. */
const getPrompt = defineRead({
  name: 'getPrompt',
  http: LOOKUP_CACHE,
  plan: (c, p: RecordParams) => recordKey(c, p, 'prompt'),
  async run(c, key) {
    const answer = await getPromptAnswer(c.readPrompt, c.nsids, key.did, key.rkey)
    if (!answer) throw noPrompt(c, key)
    return answer
  },
  // By the prompt, not by how it was named: getPrompt and getPromptByUri share entries.
  cache: { key: (k) => `prompt ${k.did} ${k.rkey}`, repos: promptRepos },
  serialize: (json, answer) => spliceRecord<PromptAnswer>(json)(answer),
})

/** The same prompt by its at-uri or its conversation's. */
const getPromptByUri = defineRead({
  ...getPrompt,
  name: 'getPromptByUri',
  async plan(c, p: { uri: string }) {
    const ref = parseRecordUri(p.uri, 'uri', [c.nsids.prompt, c.nsids.conversation])
    return { did: await repoOf(c, ref.actor, 'prompt'), rkey: ref.rkey }
  },
})

/** A filtered page of prompts, newest first; a handle nobody here has names an empty page. */
const listPromptsRead = defineRead({
  name: 'listPrompts',
  http: LIST_CACHE,
  plan: (c, p: ListFilterParams) => parseListFilters(c.db, c.nsids, p),
  run: async (c, parsed): Promise<Page<PromptListItem>> =>
    parsed ? listPrompts(c.db, c.nsids, parsed.filters, parsed.limit) : { items: [] },
  // Keyed by the parsed filters (handles resolved), so a renamed handle is a new key; a
  // page may hold any repo's prompts, so any change drops it.
  cache: { key: (parsed) => parsed && `list ${JSON.stringify(parsed)}`, repos: () => [ANY_REPO] },
})

/** The words of q, then a page with the filters, order and paging of a list. */
const searchPromptsRead = defineRead({
  name: 'searchPrompts',
  http: LIST_CACHE,
  async plan(c, p: ListFilterParams & { q: string }) {
    const words = searchWords(p.q)
    return { words, parsed: await parseListFilters(c.db, c.nsids, p) }
  },
  run: async (c, { words, parsed }): Promise<Page<SearchItem>> =>
    parsed
      ? searchPrompts(c.db, c.nsids, { words, ...parsed.filters }, parsed.limit)
      : { items: [] },
})

/** A page of one prompt's revisions, newest first. */
const getPromptRevisions = defineRead({
  name: 'getPromptRevisions',
  http: LOOKUP_CACHE,
  async plan(c, p: RecordParams & { limit: number; cursor?: string }) {
    const before = p.cursor === undefined ? null : decodeRevCursor(p.cursor)
    return { ...(await recordKey(c, p, 'prompt')), before, limit: p.limit }
  },
  async run(c, key) {
    const page = await getRevisions(c.db, key.did, key.rkey, key.before, key.limit)
    if (!page) throw noPrompt(c, key)
    return { uri: `at://${key.did}/${c.nsids.prompt}/${key.rkey}`, ...page }
  },
})

/** One revision with its texts. */
const getPromptRevision = defineRead({
  name: 'getPromptRevision',
  http: LOOKUP_CACHE,
  plan: async (c, p: RecordParams & { rev: string }) => ({
    ...(await recordKey(c, p, 'prompt')),
    rev: p.rev,
  }),
  run: (c, k) => getRevisionDetail(c.db, c.nsids, k.did, k.rkey, k.rev),
})

/** The line diff between two revisions of one prompt. */
const getPromptDiff = defineRead({
  name: 'getPromptDiff',
  http: LOOKUP_CACHE,
  plan: async (c, p: RecordParams & { from?: string; to?: string }) => ({
    ...(await recordKey(c, p, 'prompt')),
    from: p.from ?? null,
    to: p.to ?? null,
  }),
  run: (c, k) => getRevisionDiff(c.db, c.nsids, k.did, k.rkey, k.from, k.to),
})

/** One conversation with the prompt in its slot. */
const getConversationRead = defineRead({
  name: 'getConversation',
  http: LOOKUP_CACHE,
  plan: (c, p: RecordParams) => recordKey(c, p, 'conversation'),
  async run(c, { did, rkey }) {
    const view = await getConversation(c.db, c.nsids, did, rkey)
    if (!view) throw notFound(`no conversation at at://${did}/${c.nsids.conversation}/${rkey}`)
    return view
  },
  // Built from the conversation's row and its slot's prompt: both in its own repo.
  cache: { key: (k) => `conversation ${k.did} ${k.rkey}`, repos: (_, k) => [k.did] },
})

/** The agent record and counts of the visible prompts naming it. */
const getAgent = defineRead({
  name: 'getAgent',
  http: LOOKUP_CACHE,
  plan: (c, p: RecordParams) => recordKey(c, p, 'agent'),
  async run(c, { did, rkey }) {
    const summary = await getAgentSummary(c.db, c.nsids, did, rkey)
    if (!summary)
      throw notFound(`no agent at at://${did}/${c.nsids.agent}/${rkey}, and no prompt names it`)
    return summary
  },
})

/** A tracked repo's account status, sync state and record counts. */
const getRepo = defineRead({
  name: 'getRepo',
  http: LOOKUP_CACHE,
  plan: (c, p: { did: string }) => repoOf(c, parseActor(p.did, 'did'), 'repo'),
  async run(c, did) {
    const view = await getRepoView(c.db, did)
    if (!view) throw notFound(`repo ${did} is not tracked by this index`)
    return view
  },
})

/**
 * The counts of visible records and flags, and this process's ingestion cursor with its
 * hole. Both read a few rows (the counts are kept by triggers), so neither is cached and a
 * dashboard sees each commit on its next poll.
 */
const getStatsRead = defineRead({
  name: 'getStats',
  // REST keeps the lag's fraction; XRPC's whole seconds come from `xrpc` below.
  output: outputSchema(`${XRPC_NAMESPACE}.getStats`, {
    'ingest.lagSeconds': { type: ['number', 'null'] },
  }),
  http: LIST_CACHE,
  plan: async () => null,
  async run(c) {
    const { ingest } = c
    const stats = await getStats(c.db, { source: ingest?.source ?? null, key: ingest?.key ?? null })
    return { ...stats, ingest: { ...stats.ingest, gap: ingest?.gap?.() ?? null } }
  },
  // Whole seconds: the atproto data model has no fractions (the lexicon says so).
  xrpc: (stats) => {
    const { lagSeconds } = stats.ingest
    const whole = lagSeconds === null ? null : Math.round(lagSeconds)
    return { ...stats, ingest: { ...stats.ingest, lagSeconds: whole } }
  },
})

/** The catalog, by query name. */
export const READS = {
  getPrompt,
  getPromptByUri,
  listPrompts: listPromptsRead,
  searchPrompts: searchPromptsRead,
  getPromptRevisions,
  getPromptRevision,
  getPromptDiff,
  getConversation: getConversationRead,
  getAgent,
  getRepo,
  getStats: getStatsRead,
}
