import { createReadStream } from 'node:fs'
import { resolve } from 'node:path'
import { createInterface } from 'node:readline'
import type { Logger } from 'pino'
import { type SourceCursor, startValueOf, timeCursor } from '../model/cursor.ts'
import type { Sink, SourceItem } from '../model/events.ts'
import { steadyNowMs } from '../observe/clock.ts'
import type { Metrics } from '../observe/metrics.ts'
import { advanceTimeCursor, createRefusalReporter } from './cursor-guard.ts'
import { normalizeJetstreamEvent } from './jetstream/event.ts'
import { recordSkip } from './jetstream/skip.ts'
import { pushUnlessAborted, type Source } from './source.ts'

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

/** A finite source over a file; its cursor is the newest readable line's `time_us`. */
export function createReplaySource(opts: ReplaySourceOptions): Source & {
  readonly stats: ReplayStats
} {
  const key = resolve(opts.file)
  const collections = new Set(opts.collections)
  const logger = opts.logger.child({ source: 'replay', file: key })
  const refused = createRefusalReporter({ source: 'replay', logger, metrics: opts.metrics })
  const stats: ReplayStats = { lines: 0, pushed: 0, skippedBad: 0, skippedBeforeCursor: 0 }

  /** One line → the item to push, or null (blank, before the cursor, or unreadable). */
  const readLine = (
    line: string,
    lineNo: number,
    highWater: number | null,
    startUs: number | null,
  ): SourceItem | null => {
    const res = normalizeJetstreamEvent(line, { collections })
    const timeUs = res.ok ? res.item.timeUs : res.timeUs
    if (typeof timeUs === 'number' && startUs !== null && timeUs <= startUs) {
      stats.skippedBeforeCursor++
      return null
    }
    if (!res.ok) {
      stats.skippedBad++
      recordSkip({ logger, metrics: opts.metrics }, 'replay', res, { line: lineNo })
    }
    // Without a readable envelope the line is not an event of the stream: nothing to push.
    if (typeof timeUs !== 'number') return null
    const at = advanceTimeCursor(highWater, timeUs, steadyNowMs() * 1000)
    if (at.refusal) refused(at.refusal, { line: lineNo, timeUs })
    const event = res.ok ? res.item.event : null
    const cursor = at.cursor === null ? null : timeCursor(at.cursor)
    return { event, cursor, timeUs: at.timeUs, bytes: line.length }
  }

  const pushLines = async (
    lines: AsyncIterable<string>,
    sink: Sink,
    startUs: number | null,
    signal: AbortSignal,
  ) => {
    // Never moves backwards, even if the file is not sorted by time_us.
    let highWater = startUs
    for await (const line of lines) {
      stats.lines++
      if (signal.aborted) break
      if (line.trim() === '') continue
      const item = readLine(line, stats.lines, highWater, startUs)
      if (!item) continue
      highWater = item.cursor?.value ?? null
      if (!(await pushUnlessAborted(sink, item, signal))) break
      stats.pushed++
    }
  }

  async function run(sink: Sink, startCursor: SourceCursor | null, signal: AbortSignal) {
    if (signal.aborted) return
    const startUs = startValueOf(startCursor, 'time_us', 'replay')
    Object.assign(stats, { lines: 0, pushed: 0, skippedBad: 0, skippedBeforeCursor: 0 })
    const input = createReadStream(key, { encoding: 'utf8' })
    // readline's async iterator pauses the stream when its line buffer fills, so awaiting the
    // sink below keeps memory bounded however large the file is.
    const rl = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY })
    const onAbort = () => rl.close()
    signal.addEventListener('abort', onAbort, { once: true })
    logger.info({ startCursor: startUs }, 'replay started')
    try {
      await pushLines(rl, sink, startUs, signal)
    } finally {
      signal.removeEventListener('abort', onAbort)
      rl.close()
      input.destroy()
    }
    logger.info({ ...stats, aborted: signal.aborted }, 'replay finished')
  }

  return { name: 'replay', key, provenance: 'replay', resumesFrom: ['time_us'], run, stats }
}
