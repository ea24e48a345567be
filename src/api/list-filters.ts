import type { Database } from '../db/client.ts'
import type { PromptListQuery } from '../db/read/prompts.ts'
import type { Nsids } from '../model/nsids.ts'
import { decodeCursor, type FilterName, parseActor, parseRecordUri } from './params.ts'
import { resolveActor } from './reads.ts'

// The filters and paging that listPrompts and searchPrompts share (SPEC section 6: search
// has "same filters, order and paging as lists"): their lexicons declare the same
// parameters, and this one parse reads them, so the two never disagree on what one means.

/** The list parameters as their lexicon checked them (flag one of its enum, limit in range). */
export interface ListFilterParams {
  flag?: string
  did?: string
  agent?: string
  limit: number
  cursor?: string
}

export type ListFilters = Omit<PromptListQuery, 'take'>

/**
 * The filters parsed (a 400 for a malformed cursor or an agent of another collection),
 * handles resolved; null when a handle names nobody here: an empty page, like an unknown DID.
 */
export async function parseListFilters(
  db: Database,
  nsids: Nsids,
  q: ListFilterParams,
): Promise<{ filters: ListFilters; limit: number } | null> {
  const flag = (q.flag ?? null) as FilterName | null
  const after = q.cursor === undefined ? null : decodeCursor(q.cursor)
  const repo = q.did === undefined ? null : parseActor(q.did, 'did')
  const agentRef = q.agent === undefined ? null : parseRecordUri(q.agent, 'agent', [nsids.agent])
  const did = repo ? await resolveActor(db, repo) : null
  const agentDid = agentRef ? await resolveActor(db, agentRef.actor) : null
  if ((repo && did === null) || (agentRef && agentDid === null)) return null
  const agent = agentRef && agentDid ? { did: agentDid, rkey: agentRef.rkey } : null
  return { filters: { flag, did, agent, after }, limit: q.limit }
}
