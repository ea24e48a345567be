import type { Database } from '../db/client.ts'
import {
  type RevisionRow,
  readCurrentText,
  readPromptState,
  readRepoTextChains,
  readRevision,
  readRevisionPage,
  readRevisionPair,
  readRevisionRecords,
  readTextChains,
} from '../db/read/revisions.ts'
import type { RevisionTextRow } from '../db/revision-texts.ts'
import type { Nsids } from '../model/nsids.ts'
import {
  FIRST_REVISION,
  type LettaParts,
  lettaParts,
  type PromptVersion,
  recompileAnatomy,
} from '../model/recompile-anatomy.ts'
import {
  type KeptTexts,
  keptHashes,
  keptTexts,
  rebuildText,
  repoTextDecoder,
} from '../model/text-delta.ts'
import { notFound } from './http-errors.ts'
import { type Hunk, lineDiff } from './line-diff.ts'
import { encodeRevCursor } from './params.ts'

// A prompt's revision history, one revision with its texts, and the diff between two
// (SPEC section 6); texts are rebuilt from revision_texts, a whole text and deltas on it.

/** A prompt's slot: its repo and record key. */
interface Slot {
  did: string
  rkey: string
}

export type RevisionView = ReturnType<typeof toRevisionView>

/** The one place a revision row becomes its view (pages and the detail). */
const toRevisionView = (r: RevisionRow) => ({
  rev: r.rev,
  cid: r.cid,
  compiledAt: r.compiled_at,
  rawSystemHash: r.raw_system_hash,
  memfsRevision: r.memfs_revision,
  contentHash: r.content_hash,
  seenAt: new Date(r.seen_at).toISOString(),
  changed: r.changed,
  memoryFiles: r.changed === null ? null : (r.memory_files ?? []),
})

/** Null when the slot has no row or its repo is hidden; a deleted prompt keeps its history. */
export async function getRevisions(
  db: Database,
  { did, rkey }: Slot,
  before: string | null,
  limit: number,
) {
  const state = await readPromptState(db, did, rkey)
  if (!state || state.hidden) return null
  const rows = await readRevisionPage(db, did, rkey, before, limit + 1)
  if (state.deleted && rows.length === 0 && before === null) return null
  const items = rows.slice(0, limit).map(toRevisionView)
  const last = items.at(-1)
  return rows.length > limit && last ? { items, cursor: encodeRevCursor(last.rev) } : { items }
}

const NOT_KEPT =
  'this revision was indexed before revision content was kept, so its content is not available'

export interface RevisionTexts {
  content: string | null
  coreMemory: string | null
  /** Why the texts are null, when they are. */
  note: string | null
}

/** The slot's at-uri, once its revisions are readable: it has a row and its repo is visible. */
async function readableUri(db: Database, nsids: Nsids, { did, rkey }: Slot): Promise<string> {
  const uri = `at://${did}/${nsids.prompt}/${rkey}`
  const state = await readPromptState(db, did, rkey)
  if (!state || state.hidden) throw notFound(`no prompt at ${uri}`)
  return uri
}

async function loadTexts(
  db: Database,
  did: string,
  hashes: string[],
): Promise<(hash: string) => string | null> {
  const rows = await readTextChains(db, did, hashes)
  const byHash = new Map(rows.map((r) => [r.hash, r]))
  const memo = new Map<string, string | null>()
  return (hash) => {
    if (!memo.has(hash)) memo.set(hash, rebuildText(byHash, hash))
    return memo.get(hash) ?? null
  }
}

/** The kept-text columns of a revision row, by their model names. */
const keptOf = (r: RevisionTextRow): KeptTexts => ({
  contentHash: r.content_hash,
  coreMemoryHash: r.core_memory_hash,
  coreMemoryAt: r.core_memory_at,
  coreMemoryLength: r.core_memory_length,
})

const hashesOf = (r: RevisionTextRow): string[] => (r.text_kept ? keptHashes(keptOf(r)) : [])

async function textsOf(
  db: Database,
  { did, rkey }: Slot,
  r: RevisionTextRow,
  decode: (hash: string) => string | null,
): Promise<RevisionTexts> {
  if (!r.text_kept) {
    // An older database still has the current revision's texts: the record itself.
    const cur = await readCurrentText(db, did, rkey, r.cid)
    if (cur) return { content: cur.content, coreMemory: cur.core_memory, note: null }
    return { content: null, coreMemory: null, note: NOT_KEPT }
  }
  const { content, coreMemory, broken } = keptTexts(keptOf(r), decode)
  return {
    content,
    coreMemory,
    note: broken ? "part of this revision's stored content is missing" : null,
  }
}

export async function getRevisionDetail(db: Database, nsids: Nsids, slot: Slot, rev: string) {
  const uri = await readableUri(db, nsids, slot)
  const r = await readRevision(db, slot.did, slot.rkey, rev)
  if (!r) throw notFound(`no revision ${rev} of ${uri}`)
  const t = await textsOf(db, slot, r, await loadTexts(db, slot.did, hashesOf(r)))
  return { uri, ...toRevisionView(r), contentKept: t.note === null, ...t }
}

/** The diff cut into Letta's three parts, each change in exactly one of them (SPEC 14). */
export interface DiffParts {
  /** content with the core memory put back as `{CORE_MEMORY}`: the agent's template */
  template: Hunk[]
  /** the memfs projection: coreMemory before its metadata block */
  memory: Hunk[]
  /** the `<memory_metadata>` block */
  metadata: Hunk[]
}

const versionOf = (r: RevisionTextRow, t: RevisionTexts): PromptVersion => ({
  content: t.content,
  coreMemory: t.coreMemory,
  rawSystemHash: r.raw_system_hash,
  memfsRevision: r.memfs_revision,
})

/** Each of Letta's parts diffed once; null when either side is not in Letta's format. */
function partsDiff(a: RevisionTexts | null, b: RevisionTexts): DiffParts | null {
  const none: LettaParts = { template: '', memory: '', metadata: '' }
  const pa = a === null ? none : lettaParts(a.content, a.coreMemory)
  const pb = lettaParts(b.content, b.coreMemory)
  if (pa === null || pb === null) return null
  // Each part ends its last line, so a line added after it is not also the last line changed.
  const lines = (x: string, y: string) => lineDiff(x && `${x}\n`, y && `${y}\n`)
  return {
    template: lines(pa.template, pb.template),
    memory: lines(pa.memory, pb.memory),
    metadata: lines(pa.metadata, pb.metadata),
  }
}

async function pickPair(
  db: Database,
  uri: string,
  { did, rkey }: Slot,
  from: string | null,
  to: string | null,
): Promise<[RevisionTextRow | null, RevisionTextRow]> {
  const one = async (rev: string) => {
    const r = await readRevision(db, did, rkey, rev)
    if (!r) throw notFound(`no revision ${rev} of ${uri}`)
    return r
  }
  if (from !== null && to !== null) return [await one(from), await one(to)]
  if (to !== null) {
    const pair = await readRevisionPair(db, did, rkey, to)
    if (pair[0]?.rev !== to) throw notFound(`no revision ${to} of ${uri}`)
    return [pair[1] ?? null, pair[0]]
  }
  const [latest, previous] = await readRevisionPair(db, did, rkey, null)
  if (!latest) throw notFound(`${uri} has no revisions`)
  return [from === null ? (previous ?? null) : await one(from), latest]
}

/** `from` null: the revision before `to` (nothing before the first); `to` null: the newest. */
export async function getRevisionDiff(
  db: Database,
  nsids: Nsids,
  slot: Slot,
  from: string | null,
  to: string | null,
) {
  const uri = await readableUri(db, nsids, slot)
  const [a, b] = await pickPair(db, uri, slot, from, to)
  const decode = await loadTexts(db, slot.did, [...(a ? hashesOf(a) : []), ...hashesOf(b)])
  const empty: RevisionTexts = { content: '', coreMemory: '', note: null }
  const ta = a ? await textsOf(db, slot, a, decode) : empty
  const tb = await textsOf(db, slot, b, decode)
  const kept = !ta.note && !tb.note
  const content = kept ? lineDiff(ta.content ?? '', tb.content ?? '') : null
  const coreMemory = kept ? lineDiff(ta.coreMemory ?? '', tb.coreMemory ?? '') : null
  // Computed for the pair asked (not read from `to`'s row), so any two revisions compare.
  const anatomy = a ? recompileAnatomy(versionOf(a, ta), versionOf(b, tb)) : FIRST_REVISION
  return {
    uri,
    from: a?.rev ?? null,
    to: b.rev,
    ...anatomy,
    content,
    coreMemory,
    // Null unless both are in Letta's format (the first revision: against nothing).
    parts: kept ? partsDiff(a ? ta : null, tb) : null,
    note: ta.note ?? tb.note,
  }
}

/**
 * Older versions' whole records as JSON text: the kept rest with content and coreMemory
 * rebuilt. A version whose rest or a text is missing is left out (the feed says `superseded`).
 */
export async function getRevisionRecords(
  db: Database,
  keys: ReadonlyArray<{ did: string; rkey: string; cid: string }>,
) {
  const rows = await readRevisionRecords(db, keys)
  const decode = repoTextDecoder(
    await readRepoTextChains(
      db,
      rows.flatMap((r) => keptHashes(r).map((hash) => ({ did: r.did, hash }))),
    ),
  )
  return rows.flatMap((r) => {
    const { content, coreMemory, broken } = keptTexts(r, (hash) => decode(r.did, hash))
    if (broken) return []
    const rest = JSON.parse(r.rest) as unknown
    const whole =
      typeof rest === 'object' && rest !== null && !Array.isArray(rest)
        ? {
            ...rest,
            ...(content !== null && { content }),
            ...(coreMemory !== null && { coreMemory }),
          }
        : rest
    return [{ did: r.did, rkey: r.rkey, cid: r.cid, json: JSON.stringify(whole) }]
  })
}
