import type { Logger } from 'pino'
import { withTimeout } from '../faults/timers.ts'
import { createLogger } from '../observe/logger.ts'

// Whatever opens a resource registers its close right after, so closing in reverse order
// stops the ingest first and the database, which everything stands on, last.

export type Shutdown = ReturnType<typeof createShutdown>

export class ShutdownError extends Error {}

type Step = { name: string; close: () => unknown }

export function createShutdown(logger: Logger, deadlineMs = 15_000) {
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
    const deadline = performance.now() + deadlineMs
    for (const step of [...steps].reverse()) {
      const left = deadline - performance.now()
      const outcome = await withTimeout(run(step), left, () => 'expired' as const)
      if (outcome === 'expired') {
        logger.error({ step: step.name, deadlineMs }, 'closing took too long, abandoned')
        throw new ShutdownError(`closing ${step.name} took longer than ${deadlineMs} ms`)
      }
      if (outcome !== null) failed.push(outcome)
    }
    if (failed.length > 0) throw new ShutdownError(`closing failed: ${failed.join(', ')}`)
    logger.info('closed everything')
  }

  return {
    /** Registers how to close something just opened; after close() began, closes it at once. */
    add(name: string, close: () => unknown): void {
      if (closed) void run({ name, close })
      else steps.push({ name, close })
    },
    /**
     * Closes everything registered, newest first; a failed step does not stop the rest, and
     * after `deadlineMs` the unfinished ones are abandoned. Rejects naming them; one promise.
     */
    close(): Promise<void> {
      closed ??= closeAll()
      return closed
    },
    /** True once close() was called. */
    get closing(): boolean {
      return closed !== null
    },
  }
}

/** How long a closed process may wait for its event loop to empty before it exits. */
const EXIT_GRACE_MS = 2000

/**
 * SIGTERM/SIGINT close everything once; a second signal, or a close stuck past the
 * deadline, exits hard. An uncaught error closes too (installLastResort).
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
      () => {
        clearTimeout(timer)
        // A handle nothing registered (a PGlite instance dead of a PANIC, seen in the chaos
        // suite) must not keep a closed process alive until its supervisor kills it.
        setTimeout(() => {
          logger.warn({ graceMs: EXIT_GRACE_MS }, 'still running after closing everything: exiting')
          process.exit()
        }, EXIT_GRACE_MS).unref()
      },
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

/**
 * Runs a command that lasts until a signal (run, ingest, serve, demo): what `start` opens
 * registers its close on the shutdown, and a start that failed half-way closes it, then throws.
 */
export async function runUntilSignal(
  logLevel: string,
  start: (logger: Logger, shutdown: Shutdown) => Promise<unknown>,
): Promise<number> {
  const logger = createLogger(logLevel)
  const shutdown = createShutdown(logger)
  onShutdownSignal(logger, shutdown)
  try {
    await start(logger, shutdown)
  } catch (err) {
    await shutdown.close().catch((e) => logger.error({ err: e }, 'closing after a failed start'))
    throw err
  }
  return -1 // keep running until a signal
}

/**
 * An exception nobody caught or a rejection nobody handled leaves the process untrusted: log
 * it, close what can be closed (the PGlite lock, connections) within a bound, and exit 1 so a
 * supervisor restarts it. Nothing is lost: the stored cursor never passed uncommitted work.
 */
function installLastResort(logger: Logger, close: () => Promise<void>, boundMs = 5000): void {
  let fired = false
  const fatal = (kind: 'uncaughtException' | 'unhandledRejection') => (err: unknown) => {
    if (fired) {
      logger.error({ err, kind }, 'another unexpected error while closing after a fatal one')
      return
    }
    fired = true
    logger.fatal({ err, kind }, 'unexpected error: closing and exiting (status 1)')
    const timer = setTimeout(() => {
      logger.error({ boundMs }, 'closing after a fatal error took too long, exiting now')
      process.exit(1)
    }, boundMs)
    close()
      .catch((closeErr) => logger.error({ err: closeErr }, 'closing after a fatal error failed'))
      .finally(() => {
        clearTimeout(timer)
        process.exit(1)
      })
  }
  process.on('uncaughtException', fatal('uncaughtException'))
  process.on('unhandledRejection', fatal('unhandledRejection'))
}
