import type { Logger } from 'pino'
import type { Metrics } from '../observe/metrics.ts'
import type { NormalizeSkip } from './jetstream/skip.ts'

export interface SkipDeps {
  logger: Logger
  metrics: Metrics
}

/** Counts a skipped event as `outcome=error` and logs why (with e.g. `{ line }` in `extra`). */
export function recordSkip(
  deps: SkipDeps,
  source: string,
  skip: NormalizeSkip,
  extra: Record<string, unknown> = {},
): void {
  deps.metrics.eventsTotal.inc({
    source,
    collection: skip.collection,
    op: skip.op,
    outcome: 'error',
  })
  deps.logger.warn(
    {
      source,
      reason: skip.reason,
      collection: skip.collection,
      op: skip.op,
      timeUs: skip.timeUs,
      ...extra,
    },
    `skipped bad event (${skip.reason}): ${skip.detail}`,
  )
}
