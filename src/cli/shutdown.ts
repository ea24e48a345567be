import type { Logger } from 'pino'
import { installLastResort } from './last-resort.ts'

// One place that knows what a process opened and how to close it. Whatever opens a
// resource registers its close right after (fastify's onClose, ponder's shutdown list), so
// the order of registration is the dependency order, and closing runs it backwards: what
// was opened last (the ingest reading from the network) stops first, what everything
// stands on (the database) closes last. Nothing is closed twice, and nothing opened after
// closing began outlives it.

export interface Shutdown {
  /** Registers how to close something just opened; after close() began, closes it at once. */
  add(name: string, close: () => unknown): void
  /**
   * Closes everything registered, newest first, one at a time, logging each step. A step
   * that fails is logged and the rest still close; the promise then rejects naming it.
   * Bounded: after `deadlineMs` the steps not yet finished are abandoned and named.
   * Every call returns the same promise.
   */
  close(): Promise<void>
  /** True once close() was called. */
  readonly closing: boolean
}

export class ShutdownError extends Error {}

interface Step {
  name: string
  close: () => unknown
}

export function createShutdown(logger: Logger, deadlineMs = 15_000): Shutdown {
  const steps: Step[] = []
  let closed: Promise<void> | null = null

  const run = async (step: Step): Promise<string | null> => {
    const started = performance.now()
    try {
      await step.close()
      logger.debug({ step: step.name, ms: Math.round(performance.now() - started) }, 'closed')
      return null
    } catch (err) {
      logger.error({ err, step: step.name }, 'closing failed')
      return step.name
    }
  }

  const closeAll = async (): Promise<void> => {
    const failed: string[] = []
    let current = ''
    let timer: NodeJS.Timeout | undefined
    const expired = new Promise<'expired'>((resolve) => {
      timer = setTimeout(() => resolve('expired'), deadlineMs)
      timer.unref()
    })
    try {
      for (const step of [...steps].reverse()) {
        current = step.name
        const outcome = await Promise.race([run(step), expired])
        if (outcome === 'expired') {
          logger.error({ step: current, deadlineMs }, 'closing took too long, abandoned')
          throw new ShutdownError(`closing ${current} took longer than ${deadlineMs} ms`)
        }
        if (outcome !== null) failed.push(outcome)
      }
    } finally {
      clearTimeout(timer)
    }
    if (failed.length > 0) throw new ShutdownError(`closing failed: ${failed.join(', ')}`)
    logger.info('closed everything')
  }

  return {
    add(name, close) {
      if (closed) {
        // Opened while closing (a start-up step that was already under way): close it now;
        // run() logs a failure, and nothing waits for it.
        void run({ name, close })
        return
      }
      steps.push({ name, close })
    },
    close() {
      closed ??= closeAll()
      return closed
    },
    get closing() {
      return closed !== null
    },
  }
}

/**
 * SIGTERM/SIGINT close everything once; a second signal, or a close stuck past the
 * deadline, exits hard. An uncaught exception or unhandled rejection closes too, bounded,
 * and exits with status 1 (src/cli/last-resort.ts).
 */
export function onShutdownSignal(logger: Logger, shutdown: Shutdown, deadlineMs = 20_000): void {
  let signalled = false
  const handler = (signal: NodeJS.Signals) => {
    if (signalled) {
      logger.warn({ signal }, 'second signal, exiting now')
      process.exit(1)
    }
    signalled = true
    logger.info({ signal }, 'shutting down')
    const timer = setTimeout(() => {
      logger.error({ deadlineMs }, 'shutdown took too long, exiting')
      process.exit(1)
    }, deadlineMs)
    timer.unref()
    shutdown.close().then(
      () => clearTimeout(timer),
      (err) => {
        logger.error({ err }, 'shutdown failed')
        process.exitCode = 1
      },
    )
  }
  process.on('SIGTERM', handler)
  process.on('SIGINT', handler)
  installLastResort(logger, () => shutdown.close())
}
