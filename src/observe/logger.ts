import pino, { type Logger } from 'pino'

/** JSON logs by default; human-readable only when a person is watching a terminal. */
export function createLogger(level: string): Logger {
  if (process.stdout.isTTY === true && !process.env.CI) {
    return pino({
      level,
      transport: { target: 'pino-pretty', options: { colorize: true, destination: 2 } },
    })
  }
  return pino({ level }, process.stdout as pino.DestinationStream)
}
