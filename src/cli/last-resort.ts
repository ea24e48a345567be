import type { Logger } from 'pino'

// An exception nobody caught or a rejection nobody handled leaves the process untrusted: log
// it, close what can be closed (the PGlite lock, connections) within a bound, and exit 1 so a
// supervisor restarts it. Nothing is lost: the stored cursor never passed uncommitted work.

export const LAST_RESORT_CLOSE_MS = 5000

export function installLastResort(
  logger: Logger,
  close: () => Promise<void>,
  boundMs = LAST_RESORT_CLOSE_MS,
): void {
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
