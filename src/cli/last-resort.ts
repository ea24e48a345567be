import type { Logger } from 'pino'

// The process-level last resort: an exception nobody caught or a rejection nobody handled
// means the process's state can no longer be trusted. Say so in the log with the error,
// close what can be closed (commit nothing new, release the PGlite lock, end connections)
// within a bound, and exit non-zero so a supervisor restarts it, rather than dying silently
// or running on half-broken. Nothing is lost: the stored cursor never passed uncommitted work.

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
