import { createHash } from 'node:crypto'
import { type ChangeRow, getJson, getOrNull, type Json, mapLimit, readFeed } from './api-read.ts'

// The end state a run reaches, read through the public API: every visible record (prompts
// with cid, rev, flags, recompiles; conversations and agents by the URIs any compared
// feed ever named), the /v1/stats counts, and the change feed. Two runs of the same events
// must agree on all of it but the change seqs.

export interface Digest {
  /** key (at-uri) -> canonical string of what is visible there */
  records: Map<string, string>
  stats: string
  cursor: number | null
  lastEventAt: string | null
  feed: ChangeRow[]
  /** sha256 over records and stats, for the report */
  hash: string
}

const PROMPT = 'xyz.quasigod.lab.letta.compiledPrompt'

/**
 * Digest of the product at `base`; `extraUris` are record URIs to look up beyond the ones
 * its own feed names (the other run's), so a record only one side has still shows.
 */
export async function readDigest(base: string, extraUris: Iterable<string> = []): Promise<Digest> {
  const feed = await readFeed(base)
  const records = new Map<string, string>()
  for (const p of await listPrompts(base)) {
    records.set(p.uri, canon([p.cid, p.rev, [...p.flags].sort(), p.recompiles, p.validationError]))
  }
  const others = new Set<string>()
  for (const u of [...feed.map((r) => r.uri), ...extraUris]) if (!u.includes(PROMPT)) others.add(u)
  const looked = await mapLimit([...others].sort(), 8, (u) => lookupOther(base, u))
  for (const [i, u] of [...others].sort().entries())
    if (looked[i] !== null) records.set(u, looked[i]!)
  const s = await getJson(`${base}/v1/stats`)
  const stats = canon({
    prompts: s.prompts,
    conversations: s.conversations,
    agents: s.agents,
    flags: s.flags,
  })
  const hash = createHash('sha256')
  for (const k of [...records.keys()].sort()) hash.update(`${k}=${records.get(k)}\n`)
  hash.update(stats)
  return {
    records,
    stats,
    cursor: s.ingest?.cursor ?? null,
    lastEventAt: s.ingest?.lastEventAt ?? null,
    feed,
    hash: hash.digest('hex').slice(0, 16),
  }
}

async function listPrompts(base: string): Promise<Json[]> {
  const out: Json[] = []
  let cursor: string | undefined
  do {
    const page = await getJson(
      `${base}/v1/prompts?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    )
    out.push(...page.items)
    cursor = page.cursor
  } while (cursor)
  return out
}

async function lookupOther(base: string, uri: string): Promise<string | null> {
  const [, , did, collection, rkey] = uri.split('/')
  const kind = collection.endsWith('.conversation') ? 'conversations' : 'agents'
  const v = await getOrNull(`${base}/v1/${kind}/${did}/${rkey}`)
  if (v === null) return null
  if (kind === 'conversations')
    return canon([v.cid, hashOf(v.record), v.prompt ? [...v.prompt.flags].sort() : null])
  // An agent named only by prompts answers too, with agent null: that is visible state.
  return canon([hashOf(v.agent), v.prompts])
}

function hashOf(v: unknown): string {
  return createHash('sha256').update(canon(v)).digest('hex').slice(0, 16)
}

/** JSON with object keys sorted, so equal values give equal strings. */
export function canon(v: unknown): string {
  return JSON.stringify(v, (_k, x) =>
    x && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : x,
  )
}
