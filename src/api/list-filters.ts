import type { Database } from '../db/client.ts'
import type { ListPosition } from '../db/read/list-order.ts'
import type { PromptListQuery } from '../db/read/prompts.ts'
import type { ListSort } from '../model/list-sort.ts'
import type { Nsids } from '../model/nsids.ts'
import { badRequest } from './http-errors.ts'
import {
  decodeCursor,
  type FilterName,
  type PageKey,
  parseActor,
  parseRecordUri,
} from './params.ts'
import { resolveActor } from './reads.ts'

// The filters and paging that listPrompts and searchPrompts share (SPEC section 6: search
// has "same filters, order and paging as lists"): their lexicons declare the same
// parameters, and this one parse reads them, so the two never disagree on what one means.

/** The list parameters as their lexicon checked them (flag one of its enum, limit in range). */
export interface ListFilterParams {
  flag?: string
  did?: string
  agent?: string
  /** One of LIST_SORTS (the lexicon's enum); its default, `created`, applied. */
  sort: string
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
  const sort = q.sort as ListSort
  const after = q.cursor === undefined ? null : afterOf(decodeCursor(q.cursor), sort)
  const repo = q.did === undefined ? null : parseActor(q.did, 'did')
  const agentRef = q.agent === undefined ? null : parseRecordUri(q.agent, 'agent', [nsids.agent])
  const did = repo ? await resolveActor(db, repo) : null
  const agentDid = agentRef ? await resolveActor(db, agentRef.actor) : null
  if ((repo && did === null) || (agentRef && agentDid === null)) return null
  const agent = agentRef && agentDid ? { did: agentDid, rkey: agentRef.rkey } : null
  return { filters: { flag, did, agent, sort, after }, limit: q.limit }
}

/** A cursor's position, when it was made by a page of the same order (a 400 otherwise). */
function afterOf(cursor: PageKey, sort: ListSort): ListPosition {
  if (cursor.sort !== sort)
    throw badRequest(
      `cursor belongs to sort=${cursor.sort}, not sort=${sort}: pass back the cursor with the sort of the page that gave it, or leave it out to start over`,
    )
  return { rkey: cursor.rkey, did: cursor.did, key: cursor.key }
}
