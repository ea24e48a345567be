import type { StoreFault } from '../faults/errors.ts'
import type { MetricKit } from './chain-metrics.ts'

// The store's faults as /readyz and /metrics show them (a pause of the writer, reads cut at
// the read timeout), so an operator sees why ingestion stopped or reads fail without the log.

export const PAUSE_REASONS: readonly StoreFault[] = ['disk_full', 'database']

/** A statement timeout within this long makes the database "slow" for /readyz and the gauge. */
const SLOW_WINDOW_MS = 60_000

export interface IngestPause {
  reason: StoreFault
  /** When the pause began (ISO time), for /readyz. */
  since: string
  /** The store's message, for /readyz and the log. */
  error: string
}

export interface DbSlowness {
  /** Statements cancelled at the read timeout in the last minute. */
  recentTimeouts: number
  /** When the last one was (ISO time). */
  lastAt: string
}

export type StoreHealth = ReturnType<typeof createStoreHealth>

export function createStoreHealth(m: MetricKit) {
  const paused = m.gauge(
    'ingest_paused',
    'Ingestion paused by a fault of the store (1 while paused), by reason: disk_full, database',
    ['reason'],
  )
  for (const reason of PAUSE_REASONS) paused.set({ reason }, 0)
  const timeouts = m.counter(
    'db_statement_timeouts_total',
    'Reads cancelled at the read timeout (READ_TIMEOUT_MS) and answered 503',
  )
  // The window is on the monotonic clock (a step of the wall clock neither stretches nor
  // empties it); the time shown is the wall clock's.
  let recent: number[] = []
  let lastAt = ''
  const prune = () => {
    const from = performance.now() - SLOW_WINDOW_MS
    recent = recent.filter((t) => t >= from)
  }
  m.gauge(
    'db_slow',
    'Is 1 when a read was cancelled at the read timeout in the last minute',
    [],
    function collect() {
      prune()
      this.set(recent.length > 0 ? 1 : 0)
    },
  )
  let current: IngestPause | null = null
  return {
    /** The writer could not commit for a reason that is the store's; repeated calls keep `since`. */
    notePaused(reason: StoreFault, error: string): void {
      if (current?.reason !== reason) {
        if (current) paused.set({ reason: current.reason }, 0)
        current = { reason, since: new Date().toISOString(), error }
      } else current = { ...current, error }
      paused.set({ reason }, 1)
    },
    /** The writer committed again. */
    noteResumed(): void {
      if (current) paused.set({ reason: current.reason }, 0)
      current = null
    },
    pause: (): IngestPause | null => current,
    /** A read was cancelled at the read timeout (Postgres statement_timeout). */
    noteStatementTimeout(): void {
      timeouts.inc()
      recent.push(performance.now())
      lastAt = new Date().toISOString()
      // Bounded: a storm of timeouts keeps the last minute's times only.
      if (recent.length > 1000) recent = recent.slice(-1000)
    },
    /** Null unless a statement timed out in the last minute. */
    slowness(): DbSlowness | null {
      prune()
      return recent.length === 0 ? null : { recentTimeouts: recent.length, lastAt }
    },
  }
}
