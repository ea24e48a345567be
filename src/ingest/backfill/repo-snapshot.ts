import { type Commit, RepoVerificationError, verifyCommitSig } from '@atproto/repo'
import type { Logger } from 'pino'
import { retry } from '../../faults/backoff.ts'
import { isRetryable, UpstreamError } from '../../faults/errors.ts'
import type { RepoSnapshotEvent } from '../../model/events.ts'
import { steadyNowMs } from '../../observe/clock.ts'
import type { Metrics } from '../../observe/metrics.ts'
import type { DidResolver } from '../did-resolver.ts'
import {
  CarStreamError,
  type CarStreamLimits,
  readRepoCar,
  type StreamedRepo,
} from './car-stream.ts'
import { retryAfterMs, sharedUpstreamLimiter, type UpstreamLimiter } from './upstream-limiter.ts'

// One repo, fetched with getRepo from the PDS its DID document names, read as a checked
// stream (car-stream.ts) and verified: shared by backfill and the firehose's resyncs.

export interface RepoFetchOptions {
  resolver: DidResolver
  collections: string[]
  /** Default: globalThis.fetch. */
  fetch?: typeof fetch
  signal?: AbortSignal
  timeoutMs?: number
  /** Body, block and kept-record bounds (backfill/car-stream.ts defaults: 4 GiB, 4 MiB, 256 MiB). */
  limits?: CarStreamLimits
  /** Per-PDS concurrency and rate limits; default one limiter for the whole process. */
  limiter?: UpstreamLimiter
  metrics?: Metrics
  /** Says which records were left out because JSON cannot hold them. */
  logger?: Logger
  /** Unless set, only https PDS endpoints with a domain name are fetched (a DID names any URL). */
  allowPrivateNetwork?: boolean
  /** Re-resolve the DID document first (a retry after the PDS moved or the key rotated). */
  forceRefresh?: boolean
}

export async function fetchRepoSnapshot(
  did: string,
  opts: RepoFetchOptions,
): Promise<RepoSnapshotEvent> {
  try {
    return await fetchVerified(did, opts)
  } catch (err) {
    const e = asFetchError(err)
    opts.metrics?.repoFetchFailuresTotal.inc({ reason: e.reason })
    throw e
  }
}

async function fetchVerified(did: string, opts: RepoFetchOptions): Promise<RepoSnapshotEvent> {
  const refresh = { forceRefresh: opts.forceRefresh ?? false }
  let pds: string
  try {
    pds = await opts.resolver.resolvePds(did, refresh)
  } catch (err) {
    throw new UpstreamError(`resolving ${did}: ${(err as Error).message}`, {
      cause: err,
      retryable: isRetryable(err),
      reason: 'resolve',
    })
  }
  const repo = await fetchRepoCar(pds, did, opts)
  const key = await opts.resolver.resolveKey(did, refresh)
  try {
    await verifySignedCommit(repo, did, key)
  } catch (err) {
    if (!(err instanceof RepoVerificationError)) throw err
    // The key may have rotated since the document was cached: one more try with a fresh one.
    const fresh = await opts.resolver.resolveKey(did, { forceRefresh: true })
    if (fresh === key) throw new UpstreamError(err.message, { cause: err, reason: 'bad_signature' })
    await verifySignedCommit(repo, did, fresh)
  }
  const { commit, records, skipped } = repo
  for (const { collection, rkey, reason } of skipped)
    opts.logger?.warn({ did, path: `${collection}/${rkey}`, reason }, 'repo record skipped')
  const cid = repo.root.toString()
  return {
    kind: 'snapshot',
    did,
    rev: commit.rev,
    records,
    skipped,
    timeUs: steadyNowMs() * 1000,
    // The signed commit's CID and MST root: where the chain continues from.
    commit: { cid, data: commit.data.toString() },
    provenance: { source: 'backfill', verified: true, commit: cid },
  }
}

/** Checks a streamed repo's signed commit (its records were proven while streaming). */
async function verifySignedCommit(repo: StreamedRepo, did: string, key: string): Promise<void> {
  const commit: Commit = repo.commit
  if (commit.did !== did)
    throw new UpstreamError(`repo is for ${commit.did}, not ${did}`, { reason: 'wrong_did' })
  if (!(await verifyCommitSig(commit, key)))
    throw new RepoVerificationError(`invalid signature on commit ${repo.root.toString()}`)
}

async function fetchRepoCar(
  pds: string,
  did: string,
  opts: RepoFetchOptions,
): Promise<StreamedRepo> {
  const url = new URL('/xrpc/com.atproto.sync.getRepo', pds)
  url.searchParams.set('did', did)
  if (!opts.allowPrivateNetwork) assertPublicEndpoint(url)
  const timeout = AbortSignal.timeout(opts.timeoutMs ?? 300_000)
  const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout
  const limiter = opts.limiter ?? sharedUpstreamLimiter
  const send = () =>
    (opts.fetch ?? fetch)(url, {
      signal,
      redirect: 'error',
      headers: { accept: 'application/vnd.ipld.car' },
    })
  return limiter.run(
    { url, endpoint: 'com.atproto.sync.getRepo', signal, metrics: opts.metrics },
    send,
    async (res) => {
      if (!res.ok) throw await httpError(url, res)
      const maxBytes = opts.limits?.maxBytes ?? 4 * 1024 ** 3
      const length = Number(res.headers.get('content-length') ?? 0)
      if (length > maxBytes) {
        await res.body?.cancel().catch(() => {})
        throw new UpstreamError(`repo is ${length} bytes, more than the limit of ${maxBytes}`, {
          reason: 'too_large',
        })
      }
      try {
        return await readRepoCar(res.body ?? [], opts.collections, opts.limits)
      } finally {
        // A refused stream stops here: the rest of a 2 GB body is never read.
        await res.body?.cancel().catch(() => {})
      }
    },
  )
}

async function httpError(url: URL, res: Response): Promise<UpstreamError> {
  // At most 64 KiB of an error body: it is only read for its XRPC error name.
  const body = new TextDecoder().decode(await readPrefix(res, 64 * 1024))
  let detail = body.slice(0, 200)
  try {
    const parsed = JSON.parse(body) as { error?: string; message?: string }
    detail = [parsed.error, parsed.message].filter(Boolean).join(': ')
  } catch {
    // Not an XRPC error body: keep the raw text.
  }
  const retryable = res.status === 429 || res.status >= 500
  return new UpstreamError(`getRepo ${url.host}: HTTP ${res.status} ${detail}`.trim(), {
    retryable,
    retryAfterMs: retryAfterMs(res.headers),
    reason: `http_${res.status >= 500 ? '5xx' : res.status}`,
  })
}

/** Up to `max` bytes of the body; nothing when it cannot be read. */
async function readPrefix(res: Response, max: number): Promise<Uint8Array> {
  const chunks: Uint8Array[] = []
  let total = 0
  try {
    for await (const chunk of res.body ?? []) {
      chunks.push(chunk)
      total += chunk.byteLength
      if (total >= max) break
    }
  } catch {
    return new Uint8Array()
  } finally {
    await res.body?.cancel().catch(() => {})
  }
  return Buffer.concat(chunks).subarray(0, max)
}

function asFetchError(err: unknown): UpstreamError {
  if (err instanceof UpstreamError) return err
  if (err instanceof CarStreamError)
    return new UpstreamError(`invalid repo CAR: ${err.message}`, { cause: err, reason: err.reason })
  if (err instanceof RepoVerificationError)
    return new UpstreamError(err.message, { cause: err, reason: 'bad_signature' })
  const e = err as Error
  const name = e?.name
  if (name === 'TimeoutError' || name === 'AbortError' || e instanceof TypeError)
    return new UpstreamError(`getRepo: ${e.message}`, {
      cause: err,
      retryable: true,
      reason: 'network',
    })
  return new UpstreamError(`invalid repo: ${e?.message ?? String(err)}`, {
    cause: err,
    reason: 'invalid',
  })
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
    throw new UpstreamError(
      `refusing PDS endpoint ${url.origin} (set allowPrivateNetwork for local networks)`,
      { reason: 'invalid' },
    )
  }
}

/** Runs `task` (given its attempt, from 1) up to `attempts` times while it fails transiently. */
export function withRetries<T>(
  task: (attempt: number) => Promise<T>,
  attempts: number,
  signal?: AbortSignal,
  baseDelayMs = 1_000,
): Promise<T> {
  return retry((attempt) => task(attempt + 1), {
    backoff: { baseMs: baseDelayMs, maxMs: 60_000, jitter: 'equal' },
    attempts,
    signal,
  })
}

/** fetchRepoSnapshot tried up to `attempts` times, the DID document re-resolved on each retry. */
export function fetchSnapshotWithRetries(
  did: string,
  opts: RepoFetchOptions,
  attempts: number,
  retryDelayMs?: number,
): Promise<RepoSnapshotEvent> {
  const fetchOnce = (attempt: number) =>
    fetchRepoSnapshot(did, { ...opts, forceRefresh: attempt > 1 })
  return withRetries(fetchOnce, attempts, opts.signal, retryDelayMs)
}
