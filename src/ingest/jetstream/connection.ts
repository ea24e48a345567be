import type { WireRunOptions } from '../ws-source.ts'

/** How a Jetstream client connects and reconnects; both wires take the same defaults. */
export interface JetstreamConnectionOptions {
  backoffBaseMs?: number
  backoffMaxMs?: number
  /** Limit for the TCP connect plus the websocket upgrade. */
  connectTimeoutMs?: number
  /** Ping period; a connection that answers neither pings nor with data in one period is cut. */
  heartbeatMs?: number
  /** Jitter source, for tests. */
  random?: () => number
}

export function jetstreamConnection(
  o: JetstreamConnectionOptions,
): Pick<WireRunOptions, 'backoff' | 'connectTimeoutMs' | 'heartbeatMs'> {
  return {
    backoff: {
      baseMs: o.backoffBaseMs ?? 1000,
      maxMs: o.backoffMaxMs ?? 60_000,
      jitter: 'full',
      random: o.random,
    },
    connectTimeoutMs: o.connectTimeoutMs ?? 10_000,
    heartbeatMs: o.heartbeatMs ?? 30_000,
  }
}
