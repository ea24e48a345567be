import { createHash } from 'node:crypto'
import { keyOf, type PreviousText, type TextRow } from '../model/rows.ts'
import { encodeDelta } from '../model/text-delta.ts'

// Decides how each new revision's content and coreMemory are stored (see schema.ts,
// revision_texts): a text the repo already has costs nothing; content is a line delta
// against the prompt's previous content while the chain stays short; coreMemory, normally
// part of content, is kept as its offset there and costs nothing either.

/** Deltas to the nearest whole text at most: reading a revision applies this many at most. */
export const MAX_DEPTH = 48

export interface RevisionTextInput {
  did: string
  rkey: string
  content: string | null
  contentHash: string | null
  coreMemory: string | null
}

export interface RevisionTextRefs {
  coreMemoryHash: string | null
  coreMemoryAt: number | null
  coreMemoryLength: number | null
}

const sha256 = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex')

/** Revisions planned between two turns of the event loop. */
const SLICE = 16

/**
 * Text rows to insert (deduplicated within the batch) and each revision's coreMemory refs.
 * Line diffs cost milliseconds per revision, so this hands the event loop back every few
 * revisions: the API answers in the same process meanwhile.
 */
export async function planRevisionTexts(
  revisions: RevisionTextInput[],
  previous: Map<string, PreviousText>,
): Promise<{ texts: TextRow[]; refs: RevisionTextRefs[] }> {
  const texts = new Map<string, TextRow>()
  const latest = new Map(previous)
  const refs: RevisionTextRefs[] = []
  for (let i = 0; i < revisions.length; i++) {
    if (i > 0 && i % SLICE === 0) await new Promise<void>((resolve) => setImmediate(resolve))
    refs.push(planOne(revisions[i], texts, latest))
  }
  return { texts: [...texts.values()], refs }
}

function planOne(
  r: RevisionTextInput,
  texts: Map<string, TextRow>,
  latest: Map<string, PreviousText>,
): RevisionTextRefs {
  const key = keyOf(r.did, r.rkey)
  if (r.content !== null && r.contentHash !== null) {
    const depth = contentRow(texts, r.did, r.content, r.contentHash, latest.get(key))
    latest.set(key, { content: r.content, hash: r.contentHash, depth })
  }
  if (r.coreMemory === null)
    return { coreMemoryHash: null, coreMemoryAt: null, coreMemoryLength: null }
  const coreMemoryHash = sha256(r.coreMemory)
  const at = r.content === null ? -1 : r.content.indexOf(r.coreMemory)
  if (at >= 0) return { coreMemoryHash, coreMemoryAt: at, coreMemoryLength: r.coreMemory.length }
  addText(texts, {
    did: r.did,
    hash: coreMemoryHash,
    base: null,
    depth: 0,
    length: r.coreMemory.length,
    body: r.coreMemory,
  })
  return { coreMemoryHash, coreMemoryAt: null, coreMemoryLength: null }
}

/** Adds the content's row unless the batch has it; returns its depth. */
function contentRow(
  texts: Map<string, TextRow>,
  did: string,
  content: string,
  hash: string,
  prev: PreviousText | undefined,
): number {
  const have = texts.get(keyOf(did, hash))
  if (have) return have.depth
  if (prev && prev.hash === hash) return prev.depth
  const delta = prev && prev.depth < MAX_DEPTH ? encodeDelta(prev.content, content) : null
  const row =
    prev && delta !== null
      ? { did, hash, base: prev.hash, depth: prev.depth + 1, length: content.length, body: delta }
      : { did, hash, base: null, depth: 0, length: content.length, body: content }
  addText(texts, row)
  return row.depth
}

function addText(texts: Map<string, TextRow>, row: TextRow): void {
  const k = keyOf(row.did, row.hash)
  if (!texts.has(k)) texts.set(k, row)
}
