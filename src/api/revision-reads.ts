import { promptStateQuery } from '../db/api-queries.ts'
import type { Database } from '../db/client.ts'
import {
  currentTextQuery,
  type RevisionTextRow,
  revisionPairQuery,
  revisionQuery,
  textChainsQuery,
} from '../db/revision-texts.ts'
import type { Nsids } from '../model/nsids.ts'
import { applyDelta } from '../model/text-delta.ts'
import { notFound } from './http-errors.ts'
import { type Hunk, lineDiff } from './line-diff.ts'
import type { RevisionView } from './reads.ts'

// One revision with its texts, and the diff between two revisions (SPEC section 6).
// Texts are rebuilt from revision_texts: a whole text and the line deltas resting on it.

const NOT_KEPT =
  'this revision was indexed before revision content was kept, so its content is not available'

export interface RevisionTexts {
  content: string | null
  coreMemory: string | null
  /** Why the texts are null, when they are. */
  note: string | null
}

export interface RevisionDetail extends RevisionTexts, RevisionView {
  uri: string
  contentKept: boolean
}

/** The slot's revisions are readable: it has a row and its repo is visible. */
async function assertReadable(db: Database, nsids: Nsids, did: string, rkey: string) {
  const state = await db.rows<{ hidden: boolean }>(promptStateQuery(did, rkey))
  if (!state[0] || state[0].hidden)
    throw notFound(`no prompt at at://${did}/${nsids.prompt}/${rkey}`)
}

async function loadTexts(
  db: Database,
  did: string,
  hashes: string[],
): Promise<(hash: string) => string | null> {
  const rows =
    hashes.length === 0
      ? []
      : await db.rows<{ hash: string; base: string | null; length: number; body: string }>(
          textChainsQuery(did, [...new Set(hashes)]),
        )
  const byHash = new Map(rows.map((r) => [r.hash, r]))
  const memo = new Map<string, string | null>()
  const decode = (hash: string): string | null => {
    if (memo.has(hash)) return memo.get(hash) ?? null
    // Walk down to the whole text, then apply the deltas back up.
    const chain = []
    for (let h: string | null = hash; h !== null; ) {
      const row = byHash.get(h)
      if (!row || chain.length > 64) return null
      chain.push(row)
      h = row.base
    }
    let text = ''
    for (const row of chain.reverse())
      text = row.base === null ? row.body : applyDelta(text, row.body)
    const ok = text.length === Number(byHash.get(hash)?.length) ? text : null
    memo.set(hash, ok)
    return ok
  }
  return decode
}

function hashesOf(r: RevisionTextRow): string[] {
  if (!r.text_kept) return []
  return [r.content_hash, r.core_memory_at === null ? r.core_memory_hash : null].filter(
    (h): h is string => h !== null,
  )
}

async function textsOf(
  db: Database,
  did: string,
  rkey: string,
  r: RevisionTextRow,
  decode: (hash: string) => string | null,
): Promise<RevisionTexts> {
  if (!r.text_kept) {
    // An older database still has the current revision's texts: the record itself.
    const cur = await db.rows<{ content: string | null; core_memory: string | null }>(
      currentTextQuery(did, rkey, r.cid),
    )
    if (cur[0]) return { content: cur[0].content, coreMemory: cur[0].core_memory, note: null }
    return { content: null, coreMemory: null, note: NOT_KEPT }
  }
  const content = r.content_hash === null ? null : decode(r.content_hash)
  let coreMemory: string | null = null
  if (r.core_memory_at !== null && content !== null)
    coreMemory = content.slice(r.core_memory_at, r.core_memory_at + Number(r.core_memory_length))
  else if (r.core_memory_hash !== null) coreMemory = decode(r.core_memory_hash)
  const broken =
    (r.content_hash !== null && content === null) ||
    (r.core_memory_hash !== null && coreMemory === null)
  return {
    content,
    coreMemory,
    note: broken ? "part of this revision's stored content is missing" : null,
  }
}

const detailOf = (uri: string, r: RevisionTextRow, t: RevisionTexts): RevisionDetail => ({
  uri,
  rev: r.rev,
  cid: r.cid,
  compiledAt: r.compiled_at,
  rawSystemHash: r.raw_system_hash,
  memfsRevision: r.memfs_revision,
  contentHash: r.content_hash,
  seenAt: new Date(r.seen_at).toISOString(),
  contentKept: t.note === null,
  ...t,
})

export async function getRevisionDetail(
  db: Database,
  nsids: Nsids,
  did: string,
  rkey: string,
  rev: string,
): Promise<RevisionDetail> {
  const uri = `at://${did}/${nsids.prompt}/${rkey}`
  await assertReadable(db, nsids, did, rkey)
  const [r] = await db.rows<RevisionTextRow>(revisionQuery(did, rkey, rev))
  if (!r) throw notFound(`no revision ${rev} of ${uri}`)
  const decode = await loadTexts(db, did, hashesOf(r))
  return detailOf(uri, r, await textsOf(db, did, rkey, r, decode))
}

export interface RevisionDiff {
  uri: string
  from: string | null
  to: string
  content: Hunk[] | null
  coreMemory: Hunk[] | null
  note: string | null
}

async function pickPair(
  db: Database,
  uri: string,
  did: string,
  rkey: string,
  from: string | null,
  to: string | null,
): Promise<[RevisionTextRow | null, RevisionTextRow]> {
  const one = async (rev: string) => {
    const [r] = await db.rows<RevisionTextRow>(revisionQuery(did, rkey, rev))
    if (!r) throw notFound(`no revision ${rev} of ${uri}`)
    return r
  }
  if (from !== null && to !== null) return [await one(from), await one(to)]
  if (to !== null) {
    const pair = await db.rows<RevisionTextRow>(revisionPairQuery(did, rkey, to))
    if (pair[0]?.rev !== to) throw notFound(`no revision ${to} of ${uri}`)
    return [pair[1] ?? null, pair[0]]
  }
  const [latest, previous] = await db.rows<RevisionTextRow>(revisionPairQuery(did, rkey, null))
  if (!latest) throw notFound(`${uri} has no revisions`)
  return [from === null ? (previous ?? null) : await one(from), latest]
}

/** `from` null: the revision before `to` (nothing before the first); `to` null: the newest. */
export async function getRevisionDiff(
  db: Database,
  nsids: Nsids,
  did: string,
  rkey: string,
  from: string | null,
  to: string | null,
): Promise<RevisionDiff> {
  const uri = `at://${did}/${nsids.prompt}/${rkey}`
  await assertReadable(db, nsids, did, rkey)
  const [a, b] = await pickPair(db, uri, did, rkey, from, to)
  const decode = await loadTexts(db, did, [...(a ? hashesOf(a) : []), ...hashesOf(b)])
  const empty: RevisionTexts = { content: '', coreMemory: '', note: null }
  const ta = a ? await textsOf(db, did, rkey, a, decode) : empty
  const tb = await textsOf(db, did, rkey, b, decode)
  const diff = (x: string | null, y: string | null) =>
    x === null || y === null ? null : lineDiff(x, y)
  const content = ta.note || tb.note ? null : diff(ta.content ?? '', tb.content ?? '')
  const coreMemory = ta.note || tb.note ? null : diff(ta.coreMemory ?? '', tb.coreMemory ?? '')
  return { uri, from: a?.rev ?? null, to: b.rev, content, coreMemory, note: ta.note ?? tb.note }
}
