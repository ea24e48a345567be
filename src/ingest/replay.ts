import { createReadStream } from 'node:fs'
import { resolve } from 'node:path'
import { createInterface } from 'node:readline'
import type { Logger } from 'pino'
import type { Metrics } from '../metrics.ts'
import { pushUnlessAborted } from './abortable.ts'
import { normalizeJetstreamEvent, recordSkip } from './jetstream-event.ts'
import type { Sink, Source, SourceItem } from './source.ts'

export interface ReplaySourceOptions {
  /** A Jetstream-format NDJSON file: one event per line. */
  file: string
  /** Collections we keep; other commits only move the cursor. */
  collections: Iterable<string>
  logger: Logger
  metrics: Metrics
}

export interface ReplayStats {
  lines: number
  pushed: number
  skippedBad: number
  skippedBeforeCursor: number
}

/**
 * A finite source over a file. The cursor is the `time_us` of the newest line applied, so a
 * restart with the stored cursor resumes after it (lines with `time_us <= cursor` are skipped).
 */
export function createReplaySource(opts: ReplaySourceOptions): Source & {
  readonly stats: ReplayStats
} {
  const key = resolve(opts.file)
  const collections = new Set(opts.collections)
  const logger = opts.logger.child({ source: 'replay', file: key })
  const deps = { logger, metrics: opts.metrics }
  const stats: ReplayStats = { lines: 0, pushed: 0, skippedBad: 0, skippedBeforeCursor: 0 }

  async function run(sink: Sink, startCursor: number | null, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return
    Object.assign(stats, { lines: 0, pushed: 0, skippedBad: 0, skippedBeforeCursor: 0 })
    const input = createReadStream(key, { encoding: 'utf8' })
    // readline's async iterator pauses the stream when its line buffer fills, so awaiting the
    // sink below keeps memory bounded however large the file is.
    const rl = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY })
    const onAbort = () => rl.close()
    signal.addEventListener('abort', onAbort, { once: true })
    // Never moves backwards, even if the file is not sorted by time_us.
    let highWater = startCursor ?? Number.NEGATIVE_INFINITY
    let lineNo = 0
    logger.info({ startCursor }, 'replay started')
    try {
      for await (const line of rl) {
        lineNo++
        stats.lines = lineNo
        if (signal.aborted) break
        if (line.trim() === '') continue
        const res = normalizeJetstreamEvent(line, { collections })
        const timeUs = res.ok ? res.item.timeUs : res.timeUs
        if (timeUs !== undefined && startCursor !== null && timeUs <= startCursor) {
          stats.skippedBeforeCursor++
          continue
        }
        let item: SourceItem
        if (res.ok) {
          item = res.item
        } else {
          stats.skippedBad++
          recordSkip(deps, 'replay', res, { line: lineNo })
          if (timeUs === undefined) continue
          item = { event: null, cursor: timeUs, timeUs }
        }
        highWater = Math.max(highWater, item.timeUs)
        item = { ...item, cursor: highWater, bytes: line.length }
        if (!(await pushUnlessAborted(sink, item, signal))) break
        stats.pushed++
      }
    } finally {
      signal.removeEventListener('abort', onAbort)
      rl.close()
      input.destroy()
    }
    logger.info({ ...stats, aborted: signal.aborted }, 'replay finished')
  }

  return { name: 'replay', key, run, stats }
}
