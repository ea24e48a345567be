import { diffLines } from 'diff'

// Line deltas between two revisions of a prompt, for storage: a recompile changes a few
// lines of a text of tens of KB, so a long history stays near one copy. The diff is bounded
// by maxEditLength so a rewrite costs bounded work and is stored whole. Encoding: a JSON
// array of ops, n >= 0 copies n UTF-16 units of the base, -n skips n, a string is inserted;
// units, not lines, so decoding depends on no tokenizer.

/** Edits (lines added plus removed) beyond which a text is stored whole instead. */
const MAX_EDITS = 200
/** A delta must save at least this share of the text, or the text is stored whole. */
const MAX_DELTA_RATIO = 0.8

export type DeltaOp = number | string

/** A delta turning `base` into `next`, or null when storing `next` whole is as good. */
export function encodeDelta(base: string, next: string): string | null {
  const changes = diffLines(base, next, { maxEditLength: MAX_EDITS })
  if (!changes) return null
  const body = JSON.stringify(
    changes.map((c) => (c.added ? c.value : c.removed ? -c.value.length : c.value.length)),
  )
  if (body.length > next.length * MAX_DELTA_RATIO) return null
  // Checked here, where both texts are at hand: a delta that does not round-trip is never
  // stored (the text is, whole).
  return applyDelta(base, body) === next ? body : null
}

export function applyDelta(base: string, body: string): string {
  const ops = JSON.parse(body) as DeltaOp[]
  const parts: string[] = []
  let pos = 0
  for (const op of ops) {
    if (typeof op === 'string') parts.push(op)
    else if (op >= 0) {
      parts.push(base.slice(pos, pos + op))
      pos += op
    } else pos -= op
  }
  return parts.join('')
}

/** A stored text: whole (`base` null) or a delta against the text `base` names. */
export interface TextLink {
  base: string | null
  body: string
  /** UTF-16 length of the text it decodes to. */
  length: number | string
}

/** Deltas a chain may hold, and more: a longer chain is a broken one, never a loop. */
export const CHAIN_LIMIT = 64

/** The text `hash` names, rebuilt from its chain: null when a link is missing or it is too long. */
export function rebuildText(byHash: ReadonlyMap<string, TextLink>, hash: string): string | null {
  // Walk down to the whole text, then apply the deltas back up.
  const chain: TextLink[] = []
  for (let h: string | null = hash; h !== null; ) {
    const row = byHash.get(h)
    if (!row || chain.length > CHAIN_LIMIT) return null
    chain.push(row)
    h = row.base
  }
  let text = ''
  for (const row of chain.reverse())
    text = row.base === null ? row.body : applyDelta(text, row.body)
  return text.length === Number(byHash.get(hash)?.length) ? text : null
}

/**
 * The texts of several repos' chains (rows of `did`, `hash` and their link), as one decoder:
 * `decode(did, hash)` rebuilds the text `hash` names in that repo, or null (rebuildText).
 */
export function repoTextDecoder(
  chains: Iterable<TextLink & { did: string; hash: string }>,
): (did: string, hash: string) => string | null {
  const byRepo = new Map<string, Map<string, TextLink>>()
  for (const t of chains) byRepo.set(t.did, (byRepo.get(t.did) ?? new Map()).set(t.hash, t))
  return (did, hash) => {
    const texts = byRepo.get(did)
    return texts ? rebuildText(texts, hash) : null
  }
}

/** Where a revision's texts are kept: hashes, and coreMemory's place in content when it is there. */
export interface KeptTexts {
  contentHash: string | null
  coreMemoryHash: string | null
  coreMemoryAt: number | null
  coreMemoryLength: number | string | null
}

/** The hashes of the texts a revision is rebuilt from. */
export function keptHashes(r: KeptTexts): string[] {
  return [r.contentHash, r.coreMemoryAt === null ? r.coreMemoryHash : null].filter(
    (h): h is string => h !== null,
  )
}

/** A revision's content and coreMemory from its kept texts; `broken` when a part is missing. */
export function keptTexts(
  r: KeptTexts,
  decode: (hash: string) => string | null,
): { content: string | null; coreMemory: string | null; broken: boolean } {
  const content = r.contentHash === null ? null : decode(r.contentHash)
  let coreMemory: string | null = null
  if (r.coreMemoryAt !== null && content !== null)
    coreMemory = content.slice(r.coreMemoryAt, r.coreMemoryAt + Number(r.coreMemoryLength))
  else if (r.coreMemoryHash !== null) coreMemory = decode(r.coreMemoryHash)
  const broken =
    (r.contentHash !== null && content === null) ||
    (r.coreMemoryHash !== null && coreMemory === null)
  return { content, coreMemory, broken }
}
