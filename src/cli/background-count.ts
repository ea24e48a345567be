import type { Logger } from 'pino'

/**
 * A count a scrape reads from memory while a fresh one runs in the background: a scrape
 * must never wait behind an ingest transaction (PGlite has one connection and shares this
 * thread with ingestion) or it times out. At most one count runs at a time, and none
 * starts within `minIntervalMs` of the last one that finished.
 */
export function backgroundCount(
  count: () => Promise<Record<string, number>>,
  o: { logger: Logger; what: string; minIntervalMs: number },
): () => Promise<Record<string, number>> {
  let last: Record<string, number> = {}
  let at = Number.NEGATIVE_INFINITY
  let counting = false
  return async () => {
    if (!counting && performance.now() - at >= o.minIntervalMs) {
      counting = true
      count()
        .then((c) => {
          last = c
          at = performance.now()
        })
        .catch((err) => o.logger.warn({ err }, `counting ${o.what} for the gauge failed`))
        .finally(() => {
          counting = false
        })
    }
    return last
  }
}
