import type { Database } from '../db/client.ts'
import type { PromptListQuery } from '../db/read/prompts.ts'
import { FILTER_NAMES } from '../model/flags.ts'
import type { Nsids } from '../model/nsids.ts'
import { decodeCursor, PAGE_LIMIT, parseActor, parseFlag, parseRecordUri } from './params.ts'
import { resolveActor } from './reads.ts'
import { cursorParam } from './schemas.ts'

// The filters and paging that GET /v1/prompts and GET /v1/search share (SPEC section 6:
// search has "same filters, order and paging as lists"): one schema, one parse, so the two
// can never disagree on what a parameter means or which message a bad one gets.

export const listFilterProperties = {
  flag: {
    type: 'string',
    enum: [...FILTER_NAMES],
    description: 'a flag name, or ok for none',
  },
  did: { type: 'string', maxLength: 2048, description: 'DID or handle of the repo' },
  agent: {
    type: 'string',
    maxLength: 8192,
    description: 'at-uri of the agent record the prompts name',
  },
  limit: PAGE_LIMIT.schema,
  cursor: cursorParam,
} as const

export interface ListFilterQuery {
  flag?: string
  did?: string
  agent?: string
  limit?: string
  cursor?: string
}

export type ListFilters = Omit<PromptListQuery, 'take'>

/**
 * Every filter parsed (a 400 for the first bad one) before any query runs, handles resolved;
 * null when a handle names nobody here: an empty page, like an unknown DID.
 */
export async function parseListFilters(
  db: Database,
  nsids: Nsids,
  q: ListFilterQuery,
): Promise<{ filters: ListFilters; limit: number } | null> {
  const flag = q.flag === undefined ? null : parseFlag(q.flag)
  const limit = PAGE_LIMIT.parse(q.limit)
  const after = q.cursor === undefined ? null : decodeCursor(q.cursor)
  const repo = q.did === undefined ? null : parseActor(q.did, 'did')
  const agentRef = q.agent === undefined ? null : parseRecordUri(q.agent, 'agent', [nsids.agent])
  const did = repo ? await resolveActor(db, repo) : null
  const agentDid = agentRef ? await resolveActor(db, agentRef.actor) : null
  if ((repo && did === null) || (agentRef && agentDid === null)) return null
  const agent = agentRef && agentDid ? { did: agentDid, rkey: agentRef.rkey } : null
  return { filters: { flag, did, agent, after }, limit }
}
