import { readDidOfHandle } from '../../db/read/accounts.ts'
import type { ListPosition } from '../../db/read/list-order.ts'
import { type ListFlag, type PromptListQuery, readPromptPage } from '../../db/read/prompts.ts'
import { readAgent, readConversation } from '../../db/read/records.ts'
import { readSearchPage } from '../../db/read/search.ts'
import { getStats } from '../../db/read/stats.ts'
import { getRepoView } from '../../db/repo-chain.ts'
import { type FlagName, flagsToNames } from '../../model/flags.ts'
import type { ListSort } from '../../model/list-sort.ts'
import type { Nsids } from '../../model/nsids.ts'
import { MAX_WORD_CHARS, wordsOf } from '../../model/search-words.ts'
import { ANY_REPO } from '../answer-cache.ts'
import { FLAGS_WITH_RECORD, flagReasons, type Reasons } from '../flag-reasons.ts'
import { LIST_CACHE, LOOKUP_CACHE } from '../http-cache.ts'
import { badRequest, notFound } from '../http-errors.ts'
import { type Actor, decodeCursor, decodeRevCursor, parseActor, parseRecordUri } from '../params.ts'
import {
  type PromptAnswerReader,
  type PromptListItem,
  type PromptView,
  pageOf,
  recordHead,
  toListItem,
  toPromptView,
} from '../prompt-views.ts'
import { RAW_RECORD, type RawRecordAnswer, spliceRecord } from '../raw-record.ts'
import { getRevisionDetail, getRevisionDiff, getRevisions } from '../revision-reads.ts'
import { defineRead, type ReadContext, resolveActor } from './define.ts'
import { XRPC_NAMESPACE } from './lexicons.ts'
import { outputSchema } from './output-schema.ts'

// Every read of SPEC section 6, once. Parameters arrive checked by their lexicon
// (lexicons.ts checkParams); `plan` parses what a lexicon cannot know (cursors, which
// collection an at-uri names) and resolves handles, so a key is what the cache is keyed by.

/** A page of a list, and the cursor of the next when there is one. */
type Page<T> = { items: T[]; cursor?: string }

/** A lookup's repo: a handle the index does not know is as absent as a missing record. */
async function repoOf(c: ReadContext, actor: Actor, what: string): Promise<string> {
  if (actor.kind === 'did') return actor.did
  const did = await readDidOfHandle(c.db, actor.handle)
  if (did === null)
    throw notFound(`no such ${what}: handle ${actor.handle} is not known to this index`)
  return did
}

/** A record by repo and record key: as asked, and as looked up (the repo resolved). */
type RecordKey = { did: string; rkey: string }

const recordKey = async (c: ReadContext, p: RecordKey, what: string): Promise<RecordKey> => ({
  did: await repoOf(c, parseActor(p.did, 'did'), what),
  rkey: p.rkey,
})

const noPrompt = (c: ReadContext, { did, rkey }: RecordKey) =>
  notFound(`no prompt at at://${did}/${c.nsids.prompt}/${rkey}`)

/** A single prompt's answer: the view plus one sentence per flag (lists leave these out). */
export type PromptAnswer = PromptView & { reasons: Reasons }

/** A single prompt's answer, its record left as stored JSON text, parsed only for the reasons. */
export async function getPromptAnswer(
  readRow: PromptAnswerReader,
  nsids: Nsids,
  did: string,
  rkey: string,
): Promise<RawRecordAnswer<PromptAnswer> | null> {
  const row = await readRow({ did, rkey })
  if (!row) return null
  const view = toPromptView({ ...row, record: RAW_RECORD }, nsids)
  const readsRecord = view.flags.some((f) => FLAGS_WITH_RECORD.includes(f as FlagName))
  const withRecord = readsRecord ? { ...view, record: JSON.parse(row.recordJson.toString()) } : view
  const answer = { ...view, reasons: flagReasons(withRecord, row, nsids) }
  return { answer, recordJson: row.recordJson }
}

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
  plan: (c, p: RecordKey) => recordKey(c, p, 'prompt'),
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

/** The parameters listPrompts and searchPrompts share (SPEC section 6), as checked. */
interface ListParams {
  flag?: string
  did?: string
  agent?: string
  /** One of LIST_SORTS (the lexicon's enum); its default, `created`, applied. */
  sort: string
  limit: number
  cursor?: string
}

/** The filters parsed and handles resolved; null when a handle names nobody here (no page). */
async function parseListFilters(
  c: ReadContext,
  q: ListParams,
): Promise<{ filters: Omit<PromptListQuery, 'take'>; limit: number } | null> {
  const flag = (q.flag ?? null) as ListFlag | null
  const sort = q.sort as ListSort
  const after = q.cursor === undefined ? null : afterOf(q.cursor, sort)
  const repo = q.did === undefined ? null : parseActor(q.did, 'did')
  const agentRef = q.agent === undefined ? null : parseRecordUri(q.agent, 'agent', [c.nsids.agent])
  const did = repo ? await resolveActor(c.db, repo) : null
  const agentDid = agentRef ? await resolveActor(c.db, agentRef.actor) : null
  if ((repo && did === null) || (agentRef && agentDid === null)) return null
  const agent = agentRef && agentDid ? { did: agentDid, rkey: agentRef.rkey } : null
  return { filters: { flag, did, agent, sort, after }, limit: q.limit }
}

/** A cursor's position, when it was made by a page of the same order (a 400 otherwise). */
function afterOf(value: string, sort: ListSort): ListPosition {
  const cursor = decodeCursor(value)
  if (cursor.sort !== sort)
    throw badRequest(
      `cursor belongs to sort=${cursor.sort}, not sort=${sort}: pass back the cursor with the sort of the page that gave it, or leave it out to start over`,
    )
  return { rkey: cursor.rkey, did: cursor.did, key: cursor.key }
}

/** A filtered page of prompts, newest first; a handle nobody here has names an empty page. */
const listPrompts = defineRead({
  name: 'listPrompts',
  http: LIST_CACHE,
  plan: parseListFilters,
  async run(c, parsed): Promise<Page<PromptListItem>> {
    if (!parsed) return { items: [] }
    const { filters, limit } = parsed
    const rows = await readPromptPage(c.db, { ...filters, take: limit + 1 })
    return pageOf(rows, filters.sort, limit, (r) => toListItem(r, c.nsids))
  },
  // Keyed by the parsed filters (handles resolved), so a renamed handle is a new key; a
  // page may hold any repo's prompts, so any change drops it.
  cache: { key: (parsed) => parsed && `list ${JSON.stringify(parsed)}`, repos: () => [ANY_REPO] },
})

const MAX_WORDS = 16

/** The words search looks for: runs of letters and digits, lowercased, each once. */
function searchWords(q: string): string[] {
  const words = wordsOf(q)
  if (words.length === 0)
    throw badRequest('q has no words to search for: give at least one word of letters or digits')
  if (words.length > MAX_WORDS) throw badRequest(`q has more than ${MAX_WORDS} words`)
  const long = words.find((w) => w.length > MAX_WORD_CHARS)
  if (long) throw badRequest(`q has a word longer than ${MAX_WORD_CHARS} characters`)
  return words
}

export interface Snippet {
  /** Plain text around the first match (not HTML: escape it to show it). */
  text: string
  /** Where the words of q occur in `text`, as UTF-16 offsets: [start, end). */
  matches: Array<{ start: number; end: number }>
}

function snippetOf(text: string, words: string[]): Snippet {
  const alternatives = words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')
  const re = new RegExp(`(?<![\\p{L}\\p{N}_])(?:${alternatives})(?![\\p{L}\\p{N}_])`, 'giu')
  const matches = [...text.matchAll(re)].map((m) => ({
    start: m.index,
    end: m.index + m[0].length,
  }))
  return { text, matches }
}

/** The words of q, then a page with the filters, order and paging of a list. */
const searchPrompts = defineRead({
  name: 'searchPrompts',
  http: LIST_CACHE,
  async plan(c, p: ListParams & { q: string }) {
    const words = searchWords(p.q)
    return { words, parsed: await parseListFilters(c, p) }
  },
  async run(c, { words, parsed }): Promise<Page<PromptListItem & { snippet: Snippet }>> {
    if (!parsed) return { items: [] }
    const { filters, limit } = parsed
    const rows = await readSearchPage(c.db, { ...filters, words, take: limit + 1 })
    return pageOf(rows, filters.sort, limit, (r) => ({
      ...toListItem(r, c.nsids),
      snippet: snippetOf(r.snippet ?? '', words),
    }))
  },
})

/** A page of one prompt's revisions, newest first. */
const getPromptRevisions = defineRead({
  name: 'getPromptRevisions',
  http: LOOKUP_CACHE,
  async plan(c, p: RecordKey & { limit: number; cursor?: string }) {
    const before = p.cursor === undefined ? null : decodeRevCursor(p.cursor)
    return { ...(await recordKey(c, p, 'prompt')), before, limit: p.limit }
  },
  async run(c, key) {
    const page = await getRevisions(c.db, key, key.before, key.limit)
    if (!page) throw noPrompt(c, key)
    return { uri: `at://${key.did}/${c.nsids.prompt}/${key.rkey}`, ...page }
  },
})

/** One revision with its texts. */
const getPromptRevision = defineRead({
  name: 'getPromptRevision',
  http: LOOKUP_CACHE,
  plan: async (c, p: RecordKey & { rev: string }) => ({
    ...(await recordKey(c, p, 'prompt')),
    rev: p.rev,
  }),
  run: (c, k) => getRevisionDetail(c.db, c.nsids, k, k.rev),
})

/** The line diff between two revisions of one prompt. */
const getPromptDiff = defineRead({
  name: 'getPromptDiff',
  http: LOOKUP_CACHE,
  plan: async (c, p: RecordKey & { from?: string; to?: string }) => ({
    ...(await recordKey(c, p, 'prompt')),
    from: p.from ?? null,
    to: p.to ?? null,
  }),
  run: (c, k) => getRevisionDiff(c.db, c.nsids, k, k.from, k.to),
})

/** One conversation with the prompt in its slot. */
const getConversation = defineRead({
  name: 'getConversation',
  http: LOOKUP_CACHE,
  plan: (c, p: RecordKey) => recordKey(c, p, 'conversation'),
  async run(c, { did, rkey }) {
    const r = await readConversation(c.db, did, rkey)
    if (!r) throw notFound(`no conversation at at://${did}/${c.nsids.conversation}/${rkey}`)
    const prompt =
      r.promptFlags == null
        ? null
        : {
            uri: `at://${r.did}/${c.nsids.prompt}/${r.rkey}`,
            flags: flagsToNames(Number(r.promptFlags)),
          }
    return { ...recordHead(r, c.nsids.conversation), record: r.record, prompt }
  },
  // Built from the conversation's row and its slot's prompt: both in its own repo.
  cache: { key: (k) => `conversation ${k.did} ${k.rkey}`, repos: (_, k) => [k.did] },
})

/** The agent record and counts of the visible prompts naming it. */
const getAgent = defineRead({
  name: 'getAgent',
  http: LOOKUP_CACHE,
  plan: (c, p: RecordKey) => recordKey(c, p, 'agent'),
  async run(c, { did, rkey }) {
    const { record, prompts } = await readAgent(c.db, did, rkey)
    // 404 only when the agent is neither indexed (and visible) nor named by a visible prompt.
    if (!record && prompts.total === 0)
      throw notFound(`no agent at at://${did}/${c.nsids.agent}/${rkey}, and no prompt names it`)
    return {
      uri: `at://${did}/${c.nsids.agent}/${rkey}`,
      agent: record?.record ?? null,
      prompts: { total: prompts.total, ...prompts.flags },
    }
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

/** Counts and this process's ingestion cursor: a few rows (triggers keep counts), so uncached. */
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

export const READS = {
  getPrompt,
  getPromptByUri,
  listPrompts,
  searchPrompts,
  getPromptRevisions,
  getPromptRevision,
  getPromptDiff,
  getConversation,
  getAgent,
  getRepo,
  getStats: getStatsRead,
}
