import {
  cborToLexRecord,
  def,
  MemoryBlockstore,
  MST,
  RepoVerificationError,
  readCarWithRoot,
  verifyCommitSig,
} from '@atproto/repo'
import type { RepoSnapshotEvent } from '../model/events.ts'
import { sleepUnlessAborted } from './abortable.ts'
import type { DidResolver } from './did-resolver.ts'
import { lexToJson } from './lex-json.ts'

// One repo, fetched whole with com.atproto.sync.getRepo from the PDS its DID document
// names, verified (block hashes, commit DID, commit signature) and cut down to the indexed
// collections. Shared by backfill and the firehose's #sync handling.

export class RepoFetchError extends Error {
  /** Worth another try later: network trouble, 429, 5xx. */
  readonly retryable: boolean
  /** How long the host asked us to wait (429/503 `retry-after`), when it said. */
  readonly retryAfterMs: number | null
  constructor(
    message: string,
    retryable: boolean,
    options?: { cause?: unknown; retryAfterMs?: number | null },
  ) {
    super(message, options)
    this.name = 'RepoFetchError'
    this.retryable = retryable
    this.retryAfterMs = options?.retryAfterMs ?? null
  }
}

export interface RepoFetchOptions {
  resolver: DidResolver
  collections: string[]
  /** Default: globalThis.fetch. */
  fetch?: typeof fetch
  signal?: AbortSignal
  timeoutMs?: number
  /** A larger repo is refused (memory stays bounded). Default 512 MiB. */
  maxBytes?: number
  /**
   * A DID document names any URL it likes as its PDS. Unless this is set, only https
   * endpoints with a domain name are fetched (no localhost, no IP literals).
   */
  allowPrivateNetwork?: boolean
  /** Re-resolve the DID document first (a retry after the PDS moved or the key rotated). */
  forceRefresh?: boolean
}

export interface VerifiedSnapshot {
  rev: string
  records: RepoSnapshotEvent['records']
  /** The signed commit's CID and MST root: where the chain continues from. */
  commit: { cid: string; data: string }
}

export async function fetchRepoSnapshot(
  did: string,
  opts: RepoFetchOptions,
): Promise<RepoSnapshotEvent> {
  const refresh = { forceRefresh: opts.forceRefresh ?? false }
  let pds: string
  try {
    pds = await opts.resolver.resolvePds(did, refresh)
  } catch (err) {
    throw new RepoFetchError(`resolving ${did}: ${(err as Error).message}`, isTransient(err), {
      cause: err,
    })
  }
  const car = await fetchRepoCar(pds, did, opts)
  const key = await opts.resolver.resolveKey(did, refresh)
  let verified: VerifiedSnapshot
  try {
    verified = await verifyRepoSnapshot(car, did, key, opts.collections)
  } catch (err) {
    if (!(err instanceof RepoVerificationError))
      throw new RepoFetchError(`invalid repo: ${(err as Error).message}`, false, { cause: err })
    // The key may have rotated since the document was cached: one more try with a fresh one.
    const fresh = await opts.resolver.resolveKey(did, { forceRefresh: true })
    if (fresh === key) throw new RepoFetchError(err.message, false, { cause: err })
    verified = await verifyRepoSnapshot(car, did, fresh, opts.collections)
  }
  return {
    kind: 'snapshot',
    did,
    rev: verified.rev,
    records: verified.records,
    timeUs: Date.now() * 1000,
    commit: verified.commit,
    provenance: { source: 'backfill', verified: true, commit: verified.commit.cid },
  }
}

/** Verifies a getRepo CAR and extracts the records of `collections` as lex-JSON. */
export async function verifyRepoSnapshot(
  car: Uint8Array,
  did: string,
  signingKey: string,
  collections: string[],
): Promise<VerifiedSnapshot> {
  // readCarWithRoot checks every block against its CID, so everything reached from the
  // signed commit below is authenticated by the signature.
  const { root, blocks } = await readCarWithRoot(car)
  const storage = new MemoryBlockstore(blocks)
  // def.commit is the v3 shape: a v2 commit has no rev to order writes by.
  const commit = await storage.readObj(root, def.commit)
  if (commit.did !== did) throw new RepoVerificationError(`repo is for ${commit.did}, not ${did}`)
  if (!(await verifyCommitSig(commit, signingKey))) {
    throw new RepoVerificationError(`invalid signature on commit ${root.toString()}`)
  }
  const mst = MST.load(storage, commit.data)
  const records: RepoSnapshotEvent['records'] = []
  // Only the indexed collections' key ranges are walked: a large repo is mostly posts.
  for (const collection of collections) {
    for (const leaf of await mst.listWithPrefix(`${collection}/`)) {
      const bytes = blocks.get(leaf.value)
      if (!bytes) throw new Error(`record block missing: ${leaf.key}`)
      records.push({
        collection,
        rkey: leaf.key.slice(collection.length + 1),
        cid: leaf.value.toString(),
        record: lexToJson(cborToLexRecord(bytes)),
      })
    }
  }
  return {
    rev: commit.rev,
    records,
    commit: { cid: root.toString(), data: commit.data.toString() },
  }
}

export async function fetchRepoCar(
  pds: string,
  did: string,
  opts: RepoFetchOptions,
): Promise<Uint8Array> {
  const url = new URL('/xrpc/com.atproto.sync.getRepo', pds)
  url.searchParams.set('did', did)
  if (!opts.allowPrivateNetwork) assertPublicEndpoint(url)
  const maxBytes = opts.maxBytes ?? 512 * 1024 * 1024
  const timeout = AbortSignal.timeout(opts.timeoutMs ?? 120_000)
  const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout
  let res: Response
  try {
    res = await (opts.fetch ?? fetch)(url, {
      signal,
      redirect: 'error',
      headers: { accept: 'application/vnd.ipld.car' },
    })
  } catch (err) {
    throw new RepoFetchError(`getRepo ${url.host}: ${(err as Error).message}`, true, { cause: err })
  }
  if (!res.ok) {
    const body = await res.text().catch(() => '')
    let detail = body.slice(0, 200)
    try {
      const parsed = JSON.parse(body) as { error?: string; message?: string }
      detail = [parsed.error, parsed.message].filter(Boolean).join(': ')
    } catch {
      // Not an XRPC error body: keep the raw text.
    }
    const retryable = res.status === 429 || res.status >= 500
    throw new RepoFetchError(
      `getRepo ${url.host}: HTTP ${res.status} ${detail}`.trim(),
      retryable,
      {
        retryAfterMs: retryAfterMs(res.headers),
      },
    )
  }
  const length = Number(res.headers.get('content-length') ?? 0)
  if (length > maxBytes) {
    await res.body?.cancel()
    throw new RepoFetchError(`repo is ${length} bytes, more than the limit of ${maxBytes}`, false)
  }
  // Read in chunks so an unannounced oversized body is cut off instead of buffered whole.
  const chunks: Uint8Array[] = []
  let total = 0
  try {
    for await (const chunk of res.body ?? []) {
      total += chunk.byteLength
      if (total > maxBytes)
        throw new RepoFetchError(`repo is more than the limit of ${maxBytes} bytes`, false)
      chunks.push(chunk)
    }
  } catch (err) {
    if (err instanceof RepoFetchError) throw err
    throw new RepoFetchError(`getRepo ${url.host}: ${(err as Error).message}`, true, { cause: err })
  }
  return Buffer.concat(chunks, total)
}

/** `retry-after` (seconds or an HTTP date), else `ratelimit-reset` (seconds), in ms. */
export function retryAfterMs(headers: Headers, now = Date.now()): number | null {
  const after = headers.get('retry-after')
  if (after) {
    const secs = Number(after)
    if (Number.isFinite(secs) && secs >= 0) return secs * 1000
    const at = Date.parse(after)
    if (Number.isFinite(at)) return Math.max(0, at - now)
  }
  const reset = Number(headers.get('ratelimit-reset') ?? Number.NaN)
  if (headers.get('ratelimit-remaining') === '0' && Number.isFinite(reset) && reset >= 0) {
    // Seconds from now (the IETF draft); a value this large is an epoch time.
    return reset > 1e9 ? Math.max(0, reset * 1000 - now) : reset * 1000
  }
  return null
}

function assertPublicEndpoint(url: URL): void {
  const host = url.hostname
  const ipLiteral = /^[\d.]+$/.test(host) || host.includes(':') || host.startsWith('[')
  if (
    url.protocol !== 'https:' ||
    ipLiteral ||
    host === 'localhost' ||
    host.endsWith('.localhost')
  ) {
    throw new RepoFetchError(
      `refusing PDS endpoint ${url.origin} (set allowPrivateNetwork for local networks)`,
      false,
    )
  }
}

/** Network failures and server-side trouble are worth retrying; bad data is not. */
export function isTransient(err: unknown): boolean {
  if (err instanceof RepoFetchError) return err.retryable
  const e = err as { name?: string; status?: number }
  if (e?.name === 'TimeoutError' || e?.name === 'TypeError') return true
  return typeof e?.status === 'number' && (e.status === 429 || e.status >= 500)
}

/** Runs `task` up to `attempts` times while it fails with a transient error, backing off. */
export async function withRetries<T>(
  task: (attempt: number) => Promise<T>,
  attempts: number,
  signal?: AbortSignal,
  baseDelayMs = 1_000,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await task(attempt)
    } catch (err) {
      if (attempt >= attempts || !isTransient(err) || signal?.aborted) throw err
      const delay = baseDelayMs * 2 ** (attempt - 1) * (0.5 + Math.random() / 2)
      if (signal) await sleepUnlessAborted(delay, signal)
      else await new Promise((r) => setTimeout(r, delay))
    }
  }
}
