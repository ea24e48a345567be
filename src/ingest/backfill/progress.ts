import type { Logger } from 'pino'
import type { BackfillCounts } from '../../model/backfill-counts.ts'

export interface BackfillProgress extends BackfillCounts {
  elapsedMs: number
}

export interface ProgressReporter {
  update(p: BackfillProgress): void
  finish(p: BackfillProgress): void
}

/**
 * A one-line bar redrawn on a terminal; on anything else (a log file, CI, a container) a
 * plain log line now and then, because carriage returns make logs unreadable.
 */
export function createProgressReporter(opts: {
  logger: Logger
  stream?: NodeJS.WriteStream
  /** Between log lines when not a terminal. */
  logIntervalMs?: number
}): ProgressReporter {
  const stream = opts.stream ?? process.stderr
  const tty = stream.isTTY === true
  const logEvery = opts.logIntervalMs ?? 10_000
  let lastDraw = 0
  let lastLog = performance.now()
  return {
    update(p) {
      const now = performance.now()
      if (tty) {
        if (now - lastDraw < 100) return
        lastDraw = now
        stream.write(`\r\x1b[2K${renderBar(p, stream.columns ?? 100)}`)
      } else if (now - lastLog >= logEvery) {
        lastLog = now
        opts.logger.info(progressFields(p), 'backfill progress')
      }
    },
    finish(p) {
      if (tty) stream.write(`\r\x1b[2K${renderBar(p, stream.columns ?? 100)}\n`)
      opts.logger.info(progressFields(p), 'backfill finished')
    },
  }
}

/** Writes the progress where other processes read it (the database, for the overview). */
export interface ProgressRecorder {
  update(p: BackfillProgress): void
  /** The last write, once those before it are done. */
  finish(p: BackfillProgress): Promise<void>
}

/** Writes at the start, now and then (never queued behind a slow store) and last at the end. */
export function createProgressRecorder(opts: {
  write: (p: BackfillProgress, finished: boolean) => Promise<void>
  logger: Logger
  intervalMs?: number
}): ProgressRecorder {
  const every = opts.intervalMs ?? 2000
  let last = Number.NEGATIVE_INFINITY
  let inFlight: Promise<void> = Promise.resolve()
  let busy = false
  let failures = 0
  const send = (p: BackfillProgress, finished: boolean) => {
    busy = true
    inFlight = inFlight
      .then(() => opts.write(p, finished))
      .catch((err: unknown) => {
        failures++
        opts.logger.warn(
          { err, failures },
          'backfill: writing its progress for the overview failed',
        )
      })
      .finally(() => {
        busy = false
      })
    return inFlight
  }
  return {
    update(p) {
      const now = performance.now()
      if (busy || now - last < every) return
      last = now
      void send(p, false)
    },
    async finish(p) {
      await send(p, true)
      if (failures > 0)
        opts.logger.warn({ failures }, 'backfill: some progress writes failed; the run went on')
    },
  }
}

export function renderBar(p: BackfillProgress, columns: number): string {
  const finished = p.done + p.skipped + p.failed
  const rate = p.elapsedMs > 0 ? (finished * 1000) / p.elapsedMs : 0
  const total = p.listingDone ? String(p.listed) : `${p.listed}+`
  const parts = [
    `${finished}/${total} repos`,
    `${p.failed} failed`,
    `${p.records} records`,
    `${rate.toFixed(1)}/s`,
  ]
  let bar = ''
  if (p.listingDone && p.listed > 0) {
    const frac = Math.min(1, finished / p.listed)
    const width = Math.max(10, Math.min(30, columns - 80))
    const full = Math.round(frac * width)
    bar = `[${'#'.repeat(full)}${'-'.repeat(width - full)}] ${(frac * 100).toFixed(0).padStart(3)}% `
    if (rate > 0 && finished < p.listed)
      parts.push(`ETA ${formatDuration(((p.listed - finished) / rate) * 1000)}`)
  }
  return `backfill ${bar}${parts.join(' · ')}`.slice(0, Math.max(20, columns - 1))
}

function progressFields(p: BackfillProgress) {
  return { ...p, elapsedSeconds: Math.round(p.elapsedMs / 1000), elapsedMs: undefined }
}

function formatDuration(ms: number): string {
  const s = Math.round(ms / 1000)
  const h = Math.floor(s / 3600)
  const m = Math.floor((s % 3600) / 60)
  const sec = String(s % 60).padStart(2, '0')
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${sec}` : `${m}:${sec}`
}
