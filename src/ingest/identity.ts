import { HandleResolver } from '@atproto/identity'
import { isValidHandle, normalizeHandle } from '@atproto/syntax'
import type { HandleVerifier } from '../model/handles.ts'
import type { Metrics } from '../observe/metrics.ts'
import { counted, type DidResolver } from './did-resolver.ts'

// A handle is only worth showing when both sides agree: the DID document claims it
// (alsoKnownAs at://handle) and the handle points back at the DID. Anyone can put any
// handle in an #identity event or a DID document, so neither side alone is proof.

export interface HandleVerifierOptions {
  resolver: DidResolver
  /** Handle → DID, or null. Default: DNS TXT `_atproto` then `https://{handle}/.well-known/atproto-did`. */
  resolveHandle?: (handle: string) => Promise<string | null>
  timeoutMs?: number
  onError?: (did: string, err: unknown) => void
  /** Counts each handle → DID lookup in upstream_requests_total (endpoint `handle`). */
  metrics?: Pick<Metrics, 'upstreamRequestsTotal'>
}

export function createHandleVerifier(opts: HandleVerifierOptions): HandleVerifier {
  const handles = new HandleResolver({ timeout: opts.timeoutMs ?? 5_000 })
  const resolveHandle = opts.resolveHandle ?? (async (h) => (await handles.resolve(h)) ?? null)
  // The claimed handle is not used: the document is authoritative, and a claim that differs
  // from it is stale (the event raced a later change).
  return async (did) => {
    try {
      // An identity change is exactly when the cached document is out of date.
      const resolved = await opts.resolver.resolve(did, { forceRefresh: true })
      const handle = resolved?.handle ? normalizeHandle(resolved.handle) : null
      if (!handle || !isValidHandle(handle) || handle === 'handle.invalid') return null
      const back = await counted(opts.metrics, 'handle', () => resolveHandle(handle))
      return back === did ? handle : null
    } catch (err) {
      opts.onError?.(did, err)
      return null
    }
  }
}
