// Jetstream v1 events (what the demo generator and tests write) as the frames a Jetstream v2
// server sends (notes/jetstream-v2.md sections 4 and 7): the `subscribeEvents` envelope, and
// the v1 `/subscribe` frame with the added `cursor` field.

const NS = 'network.bsky.jetstream.subscribeEvents'

/** One stored event: `seq` assigned at append, both wires' texts built once. */
export interface V2Stored {
  seq: number
  timeUs: number
  /** Null for non-commit kinds and unreadable input: collection filters never drop those. */
  collection: string | null
  kind: string | null
  v2: string
  v1: string
  /** The v2 frame compressed with dictionary `id`: once per dictionary, not per connection. */
  zstd?: { id: number; z: Buffer }
}

/** RFC 3339 UTC with exactly six fractional digits, as Jetstream v2 writes `time`. */
export function isoMicros(timeUs: number): string {
  const iso = new Date(Math.floor(timeUs / 1000)).toISOString()
  return `${iso.slice(0, 19)}.${String(timeUs % 1_000_000).padStart(6, '0')}Z`
}

export function v2Envelope(payload: Record<string, unknown>): string {
  return JSON.stringify({ $type: 'message', payload })
}

/** A v1 event (object or JSON text) as both wires' frames at `seq`. */
export function storedOf(e: unknown, seq: number, previousUs: number): V2Stored {
  let value: unknown = e
  if (typeof e === 'string') {
    try {
      value = JSON.parse(e)
    } catch {
      value = null
    }
  }
  const v = (value ?? {}) as Record<string, unknown>
  const timeUs = typeof v.time_us === 'number' ? v.time_us : previousUs
  const kind = typeof v.kind === 'string' ? v.kind : null
  const commit = (v.commit ?? {}) as Record<string, unknown>
  const collection =
    kind === 'commit' && typeof commit.collection === 'string' ? commit.collection : null
  const base = { seq, did: v.did, time: isoMicros(timeUs) }
  const payload =
    kind === 'commit'
      ? { $type: `${NS}#commit`, ...base, ...commit }
      : { $type: `${NS}#${kind}`, ...base, [kind ?? 'unknown']: v[kind ?? 'unknown'] }
  const v1 = typeof e === 'string' && value === null ? e : JSON.stringify({ ...v, cursor: seq })
  return { seq, timeUs, collection, kind, v2: v2Envelope(payload), v1 }
}

/** A `#sync` marker (repo resynced at `rev`); `blocks` absent = a chain-break resync. */
export function syncPayload(did: string, rev: string, timeUs: number, blocks?: string) {
  return {
    $type: `${NS}#sync`,
    did,
    time: isoMicros(timeUs),
    sync: {
      did,
      rev,
      seq: 0,
      time: isoMicros(timeUs),
      ...(blocks ? { blocks: { $bytes: blocks } } : {}),
    },
  }
}

export function infoFrame(name: string, message: string): string {
  return v2Envelope({ $type: `${NS}#info`, name, message })
}

export function errorFrame(error: string, message: string): string {
  return JSON.stringify({ $type: 'error', error, message })
}

/** `collections` of subscribeEvents (exact NSIDs or `prefix.*`) as a predicate; commits only. */
export function collectionMatcher(wanted: string[]): (collection: string | null) => boolean {
  if (wanted.length === 0) return () => true
  const exact = new Set(wanted.filter((w) => !w.endsWith('.*')))
  const prefixes = wanted.filter((w) => w.endsWith('.*')).map((w) => w.slice(0, -1))
  return (c) => c === null || exact.has(c) || prefixes.some((p) => c.startsWith(p))
}
