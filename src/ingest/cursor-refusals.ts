import type { Logger } from 'pino'
import type { Metrics } from '../observe/metrics.ts'
import type { CursorRefusal } from './cursor-guard.ts'

/** Counts every refusal and logs a few per window: a hostile stream must not flood the log. */
export type RefusalReporter = (reason: CursorRefusal, detail: Record<string, unknown>) => void

export interface RefusalReporterOptions {
  source: string
  logger: Logger
  metrics: Metrics
  /** Log lines per window; the rest are counted and summed up in the next line. */
  burst?: number
  windowMs?: number
  now?: () => number
}

export function createRefusalReporter(opts: RefusalReporterOptions): RefusalReporter {
  const burst = opts.burst ?? 10
  const windowMs = opts.windowMs ?? 60_000
  const now = opts.now ?? (() => performance.now())
  let windowStart = Number.NEGATIVE_INFINITY
  let logged = 0
  let suppressed = 0
  return (reason, detail) => {
    opts.metrics.cursorRefusedTotal.inc({ source: opts.source, reason })
    const t = now()
    if (t - windowStart >= windowMs) {
      windowStart = t
      logged = 0
    }
    if (logged >= burst) {
      suppressed++
      return
    }
    logged++
    // `detail` carries positions only (time_us, seq): DIDs of hostile input stay out of it.
    opts.logger.warn(
      { source: opts.source, reason, ...detail, suppressedBefore: suppressed },
      `position refused for the cursor and the lag (${reason}); the event itself is not lost`,
    )
    suppressed = 0
  }
}
