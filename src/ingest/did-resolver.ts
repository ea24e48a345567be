import {
  type DidDocument,
  DidPlcResolver,
  DidWebResolver,
  getHandle,
  getKey,
  getPds,
} from '@atproto/identity'
import { LRUCache } from 'lru-cache'
import type { Config } from '../config/config.ts'
import { createLimiter } from '../faults/limiter.ts'
import type { Metrics } from '../observe/metrics.ts'

// DID documents (signing key, PDS endpoint): every firehose commit needs its author's key,
// so lookups are cached, shared between concurrent callers and capped in flight.

export interface ResolvedDid {
  did: string
  doc: DidDocument
  /** `did:key:…` of the atproto signing key, or null when the document has none. */
  signingKey: string | null
  /** The first `at://` name in alsoKnownAs, lowercased; unverified. */
  handle: string | null
  /** The `#atproto_pds` service endpoint, or null. */
  pds: string | null
}

export interface DidResolver {
  /** null when the DID does not exist (404 from PLC / did:web). Throws on transient failures. */
  resolve(did: string, opts?: { forceRefresh?: boolean }): Promise<ResolvedDid | null>
  /** The signing key; throws when the DID or its key is missing. */
  resolveKey(did: string, opts?: { forceRefresh?: boolean }): Promise<string>
  /** The PDS endpoint; throws when the DID or its endpoint is missing. */
  resolvePds(did: string, opts?: { forceRefresh?: boolean }): Promise<string>
}

export interface DidResolverOptions {
  plcUrl: string
  /** Most documents kept (least recently used go first). */
  cacheSize?: number
  /** A document older than this is fetched again before use. */
  ttlMs?: number
  /** A forced refresh of a document younger than this is answered from the cache. */
  minRefreshMs?: number
  concurrency?: number
  /** Fetch for did:web; the default refuses http, IP literals and private addresses (SSRF). */
  webFetch?: typeof fetch
  now?: () => number
  /** Counts each document fetch in upstream_requests_total (endpoint `plc` or `did:web`). */
  metrics?: Pick<Metrics, 'upstreamRequestsTotal'>
}

export class DidNotFoundError extends Error {
  readonly did: string
  constructor(did: string, what = 'DID document') {
    super(`${what} not found for ${did}`)
    this.name = 'DidNotFoundError'
    this.did = did
  }
}

type Refresh = { forceRefresh?: boolean }

const TIMEOUT_MS = 10_000
/** When a refetch fails, a document up to this old is still used. */
const MAX_STALE_MS = 24 * 60 * 60_000
/** How long a "not found" answer is remembered. */
const NEGATIVE_TTL_MS = 60_000

interface Entry {
  value: ResolvedDid | null
  fetchedAt: number
}

/**
 * lru-cache's fetchMethod gives least-recently-used eviction, a TTL per entry (shorter for
 * "not found") and one request per DID at a time; a failed refetch keeps the old entry. The
 * methods are own properties, so callers may spread the resolver and replace one.
 */
export function createDidResolver(opts: DidResolverOptions): DidResolver {
  const ttlMs = opts.ttlMs ?? 60 * 60_000
  const minRefreshMs = opts.minRefreshMs ?? 5_000
  const now = opts.now ?? (() => performance.now())
  const plc = new DidPlcResolver(opts.plcUrl, TIMEOUT_MS, undefined, globalThis.fetch)
  const web = new DidWebResolver(TIMEOUT_MS, undefined, opts.webFetch)
  const limit = createLimiter(opts.concurrency ?? 16)
  const fetchDoc = (did: string): Promise<DidDocument | null> => {
    if (did.startsWith('did:plc:'))
      return limit(() => counted(opts.metrics, 'plc', () => plc.resolveNoCache(did)))
    if (did.startsWith('did:web:'))
      return limit(() => counted(opts.metrics, 'did:web', () => web.resolveNoCache(did)))
    throw new Error(`unsupported DID method: ${did}`)
  }
  const cache = new LRUCache<string, Entry>({
    max: opts.cacheSize ?? 100_000,
    perf: { now },
    // A cached clock reading would hide a test clock's jumps; one now() a lookup is cheap.
    ttlResolution: 0,
    noDeleteOnFetchRejection: true,
    fetchMethod: async (did, _stale, { options }) => {
      const doc = await fetchDoc(did)
      options.ttl = doc ? ttlMs : NEGATIVE_TTL_MS
      return { value: doc ? toResolved(did, doc) : null, fetchedAt: now() }
    },
  })
  const resolve = async (did: string, o?: Refresh): Promise<ResolvedDid | null> => {
    const cached = cache.peek(did, { allowStale: true })
    const recent = cached && now() - cached.fetchedAt < minRefreshMs
    try {
      const forceRefresh = o?.forceRefresh && !(recent && cache.peek(did))
      return ((await cache.fetch(did, { forceRefresh })) as Entry).value
    } catch (err) {
      // Stale-if-error: a PLC hiccup should not fail every commit of known authors.
      if (cached?.value && now() - cached.fetchedAt < MAX_STALE_MS) return cached.value
      throw err
    }
  }
  return {
    resolve,
    async resolveKey(did, o) {
      if (did.startsWith('did:key:')) return did
      const r = await resolve(did, o)
      if (!r) throw new DidNotFoundError(did)
      if (!r.signingKey) throw new DidNotFoundError(did, 'atproto signing key')
      return r.signingKey
    },
    async resolvePds(did, o) {
      const r = await resolve(did, o)
      if (!r) throw new DidNotFoundError(did)
      if (!r.pds) throw new DidNotFoundError(did, 'PDS endpoint')
      return r.pds
    },
  }
}

/** Counts one upstream lookup: a document as 200, "no such DID" as 404, a throw as `error`. */
export async function counted<R>(
  metrics: Pick<Metrics, 'upstreamRequestsTotal'> | undefined,
  endpoint: string,
  lookup: () => Promise<R>,
): Promise<R> {
  try {
    const found = await lookup()
    metrics?.upstreamRequestsTotal.inc({ endpoint, status: found == null ? '404' : '200' })
    return found
  } catch (err) {
    metrics?.upstreamRequestsTotal.inc({ endpoint, status: 'error' })
    throw err
  }
}

function toResolved(did: string, doc: DidDocument): ResolvedDid {
  let signingKey: string | null = null
  try {
    signingKey = getKey(doc) ?? null
  } catch {
    // An unparseable key is the same as none: commits of this DID cannot be verified.
  }
  const handle = getHandle(doc)?.toLowerCase() || null
  return { did, doc, signingKey, handle, pds: getPds(doc) ?? null }
}

/** The DID resolver the configuration asks for: PLC_URL, did:web, private hosts if allowed. */
export function resolverFor(
  config: Pick<Config, 'plcUrl' | 'allowPrivateNetwork'>,
  metrics?: Metrics,
): DidResolver {
  return createDidResolver({
    plcUrl: config.plcUrl,
    metrics,
    ...(config.allowPrivateNetwork ? { webFetch: fetch } : {}),
  })
}
