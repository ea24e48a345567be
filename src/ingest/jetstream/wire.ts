import type { Logger } from 'pino'
import type { AppContext } from '../../context/context.ts'
import { retry } from '../../faults/backoff.ts'
import type { SourceCursor } from '../../model/cursor.ts'
import type { IngestGap, Sink } from '../../model/events.ts'
import type { HandleVerifier } from '../../model/handles.ts'
import type { Source } from '../source.ts'
import { createJetstreamSource, jetstreamOptionsFromConfig } from './v1.ts'
import { createJetstreamV2Source, V2_NSID } from './v2.ts'

// Which Jetstream wire a JETSTREAM_URL means (SPEC 5): `/subscribe` is v1, the v2 NSID path
// is v2, and a bare host asks the server: v2 first, v1 when it answers 404 there.

export type JetstreamWire = 'v1' | 'v2' | 'auto'

export function wireOf(url: string): JetstreamWire {
  const path = new URL(url).pathname
  if (path === '' || path === '/') return 'auto'
  return path.endsWith(`/xrpc/${V2_NSID}`) ? 'v2' : 'v1'
}

/** Both wires' URLs on the host of `url` (query kept). */
export function wireUrls(url: string): { v1: string; v2: string } {
  const u = new URL(url)
  const at = (path: string) => Object.assign(new URL(u), { pathname: path }).toString()
  return { v1: at('/subscribe'), v2: at(`/xrpc/${V2_NSID}`) }
}

export interface DetectOptions {
  logger: Logger
  fetch?: typeof fetch
  backoffBaseMs?: number
  backoffMaxMs?: number
  timeoutMs?: number
}

/**
 * Asks the host whether it serves subscribeEvents: a plain GET there is answered 404 by a
 * v1-only Jetstream and by anything else (400, 426, 503) on v2. Unreachable: retried.
 */
export async function detectWire(
  url: string,
  o: DetectOptions,
  signal: AbortSignal,
): Promise<'v1' | 'v2'> {
  const probe = new URL(wireUrls(url).v2)
  probe.protocol = probe.protocol === 'wss:' ? 'https:' : 'http:'
  probe.search = ''
  return retry(
    async () => {
      const res = await (o.fetch ?? fetch)(probe, {
        signal: AbortSignal.any([signal, AbortSignal.timeout(o.timeoutMs ?? 10_000)]),
      })
      await res.body?.cancel()
      const wire = res.status === 404 ? 'v1' : 'v2'
      o.logger.info({ url, status: res.status, wire }, `Jetstream wire detected: ${wire}`)
      return wire
    },
    {
      backoff: { baseMs: o.backoffBaseMs ?? 1000, maxMs: o.backoffMaxMs ?? 60_000, jitter: 'full' },
      retryable: () => true,
      signal,
      onRetry: (err, _, delayMs) =>
        o.logger.warn({ err, url, delayMs }, 'Jetstream wire detection failed; retrying'),
    },
  )
}

/** A source that picks its wire in `prepare`; its `key` (the cursor's) is the chosen URL. */
export function createAutoJetstreamSource(
  url: string,
  make: { v1: (url: string) => Source; v2: (url: string) => Source },
  o: DetectOptions,
): Source & { readonly wire: 'v1' | 'v2' | null } {
  let inner: Source | null = null
  let wire: 'v1' | 'v2' | null = null
  return {
    name: 'jetstream',
    provenance: 'jetstream',
    get key() {
      return inner?.key ?? url
    },
    get wire() {
      return wire
    },
    /** The chosen wire's: unknown before `prepare`, and no stored cursor may be judged then. */
    get resumesFrom() {
      if (!inner) throw new Error('createAutoJetstreamSource: resumesFrom before prepare')
      return inner.resumesFrom
    },
    get gap(): IngestGap | null {
      return inner?.gap ?? null
    },
    async prepare(signal: AbortSignal) {
      if (inner) return
      wire = await detectWire(url, o, signal)
      inner = make[wire](wireUrls(url)[wire])
    },
    async run(sink: Sink, startCursor: SourceCursor | null, signal: AbortSignal) {
      if (!inner) throw new Error('createAutoJetstreamSource: run before prepare')
      return inner.run(sink, startCursor, signal)
    },
  }
}

/**
 * The Jetstream source JETSTREAM_URL names: v1 `/subscribe`, v2 `subscribeEvents`, or a bare
 * host, which is asked (v2 when offered). `tuning` is for the demo and tests.
 */
export function jetstreamSourceFor(
  ctx: Pick<AppContext, 'config' | 'logger' | 'metrics'>,
  verifyHandle: HandleVerifier,
  tuning: { backoffBaseMs?: number } = {},
): Source {
  const { config, logger, metrics } = ctx
  const base = { ...jetstreamOptionsFromConfig(config), logger, metrics, verifyHandle, ...tuning }
  const v2 = { onTooOld: config.jetstreamOnTooOld, zstd: config.jetstreamZstd }
  const make = {
    v1: (url: string) => createJetstreamSource({ ...base, url }),
    v2: (url: string) => createJetstreamV2Source({ ...base, ...v2, url }),
  }
  const wire = wireOf(config.jetstreamUrl)
  if (wire !== 'auto') return make[wire](config.jetstreamUrl)
  return createAutoJetstreamSource(config.jetstreamUrl, make, { logger, ...tuning })
}
