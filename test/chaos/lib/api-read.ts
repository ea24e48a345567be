// Reads of the product's public API for the digest, with a bounded number in flight.

/** A JSON answer, read field by field by the digest (the API's schemas are the contract). */
// biome-ignore lint/suspicious/noExplicitAny: API answers are checked by comparison, not typed
export type Json = any

export async function getJson(url: string): Promise<Json> {
  const res = await fetch(url)
  if (!res.ok) throw new Error(`GET ${url}: ${res.status} ${await res.text()}`)
  return res.json()
}

/** The body of a GET, or null on 404. */
export async function getOrNull(url: string): Promise<Json> {
  const res = await fetch(url)
  if (res.status === 404) {
    await res.arrayBuffer()
    return null
  }
  if (!res.ok) throw new Error(`GET ${url}: ${res.status} ${await res.text()}`)
  return res.json()
}

/** Runs `fn` over `items` with at most `width` at once, keeping the order of results. */
export async function mapLimit<T, R>(
  items: T[],
  width: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const out = new Array<R>(items.length)
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const i = next++
      out[i] = await fn(items[i])
    }
  }
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker))
  return out
}

export interface ChangeRow {
  seq: number
  op: 'upsert' | 'delete'
  collection: string
  uri: string
  cid: string | null
  flags: string[]
}

/** The whole change feed, oldest first. */
export async function readFeed(base: string): Promise<ChangeRow[]> {
  const rows: ChangeRow[] = []
  let since = 0
  for (;;) {
    const res = await fetch(`${base}/v1/changes?since=${since}&limit=10000`)
    if (!res.ok) throw new Error(`GET /v1/changes: ${res.status} ${await res.text()}`)
    const lines = (await res.text()).split('\n').filter(Boolean)
    if (lines.length === 0) return rows
    for (const l of lines) rows.push(JSON.parse(l) as ChangeRow)
    since = rows[rows.length - 1].seq
  }
}
