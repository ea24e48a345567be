import type { PromptAnswerRow, PromptKey, PromptListRow, PromptRow } from '../db/read/prompts.ts'
import { flagsToNames } from '../model/flags.ts'
import type { ListSort } from '../model/list-sort.ts'
import type { Nsids } from '../model/nsids.ts'
import { encodeCursor } from './params.ts'

// The one place a prompt row becomes its JSON view (SPEC section 6): a lookup, a list
// item and a search item are all this view, with what each adds.

/** A prompt as every answer shows it (the lexicon's promptView). */
export type PromptView = ReturnType<typeof toPromptView>

export type PromptListItem = PromptView & { contentBytes: number | null }

/** Reads a prompt's answer row: the routes' batched reader (db/read/batch.ts), or one read. */
export type PromptAnswerReader = (key: PromptKey) => Promise<PromptAnswerRow | null>

/** The fields every record's view starts with. */
export function recordHead(
  { did, rkey, cid }: { did: string; rkey: string; cid: string | null },
  collection: string,
) {
  // A visible row is never a tombstone, so it has a cid.
  return { uri: `at://${did}/${collection}/${rkey}`, cid: cid as string, did, rkey }
}

export function toPromptView(row: PromptRow, nsids: Nsids) {
  return {
    ...recordHead(row, nsids.prompt),
    rev: row.rev,
    record: row.record,
    flags: flagsToNames(Number(row.flags)),
    conversation: {
      uri: `at://${row.did}/${nsids.conversation}/${row.rkey}`,
      exists: row.conversationExists,
    },
    agent: { uri: row.agentUri, exists: row.agentExists },
    recompiles: Number(row.recompiles),
    changed: row.changed,
    indexedAt: new Date(row.indexedAt).toISOString(),
    validationError: row.validationError,
    provenance: {
      source: row.source,
      verified: row.verified,
      commit: row.commitCid,
      rev: row.rev,
    },
  }
}

export function toListItem(row: PromptRow, nsids: Nsids): PromptListItem {
  return {
    ...toPromptView(row, nsids),
    contentBytes: row.contentBytes == null ? null : Number(row.contentBytes),
  }
}

/** A page of `limit` items from `limit + 1` rows: the extra row only says another follows. */
export function pageOf<R extends PromptListRow, T>(
  rows: R[],
  sort: ListSort,
  limit: number,
  view: (row: R) => T,
): { items: T[]; cursor?: string } {
  const page = rows.slice(0, limit)
  const items = page.map(view)
  const last = page.at(-1)
  return rows.length > limit && last
    ? { items, cursor: encodeCursor({ sort, rkey: last.rkey, did: last.did, key: last.sortKey }) }
    : { items }
}
