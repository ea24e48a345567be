import type { ChangeRow } from './api-read.ts'
import type { Digest } from './digest.ts'

// What "the same end state" means: equal records and stats, and a change feed whose
// per-URI history is a subsequence of the one-event-per-batch run's (a batch may fold
// several changes of one record into one row; a crash may not invent or repeat one).

export interface Comparison {
  ok: boolean
  problems: string[]
  summary: string
}

const SHOW = 5

export function compareDigests(got: Digest, ref: Digest, fineFeed: ChangeRow[]): Comparison {
  const problems: string[] = []
  const missing: string[] = []
  const extra: string[] = []
  const differ: string[] = []
  for (const [k, v] of ref.records) {
    const g = got.records.get(k)
    if (g === undefined) missing.push(k)
    else if (g !== v) differ.push(`${k}: ${g} != expected ${v}`)
  }
  for (const k of got.records.keys()) if (!ref.records.has(k)) extra.push(k)
  if (missing.length)
    problems.push(`${missing.length} records missing, e.g. ${missing.slice(0, SHOW).join(', ')}`)
  if (extra.length)
    problems.push(`${extra.length} records extra, e.g. ${extra.slice(0, SHOW).join(', ')}`)
  if (differ.length)
    problems.push(`${differ.length} records differ, e.g. ${differ.slice(0, SHOW).join('; ')}`)
  if (got.stats !== ref.stats) problems.push(`stats ${got.stats} != expected ${ref.stats}`)
  problems.push(...checkFeed(got.feed, fineFeed))
  const summary =
    `${got.records.size} records, digest ${got.hash} (expected ${ref.hash}), ` +
    `feed ${got.feed.length} rows (one-per-batch run: ${fineFeed.length})`
  return { ok: problems.length === 0, problems, summary }
}

type Step = string

function histories(feed: ChangeRow[]): Map<string, Step[]> {
  const m = new Map<string, Step[]>()
  for (const r of feed) {
    const step = `${r.op}:${r.cid ?? ''}:${[...(r.flags ?? [])].sort().join(',')}`
    const h = m.get(r.uri)
    if (h) h.push(step)
    else m.set(r.uri, [step])
  }
  return m
}

function isSubsequence(a: Step[], b: Step[]): boolean {
  let j = 0
  for (const x of a) {
    while (j < b.length && b[j] !== x) j++
    if (j === b.length) return false
    j++
  }
  return true
}

export function checkFeed(feed: ChangeRow[], fineFeed: ChangeRow[]): string[] {
  const problems: string[] = []
  for (let i = 1; i < feed.length; i++) {
    if (feed[i].seq <= feed[i - 1].seq) {
      problems.push(`feed seqs not increasing at row ${i}: ${feed[i - 1].seq} then ${feed[i].seq}`)
      break
    }
  }
  const fine = histories(fineFeed)
  const bad: string[] = []
  for (const [uri, h] of histories(feed)) {
    const ref = fine.get(uri) ?? []
    if (!isSubsequence(h, ref)) bad.push(`${uri}: [${h.join(' ')}] not within [${ref.join(' ')}]`)
  }
  if (bad.length)
    problems.push(
      `${bad.length} URIs' change histories are not a subsequence of the one-event-per-batch run's, e.g. ${bad.slice(0, 3).join('; ')}`,
    )
  return problems
}
