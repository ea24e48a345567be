import pino, { type Logger } from 'pino'

/** JSON logs by default; human-readable only when a person is watching a terminal. */
export function createLogger(
  level: string,
  opts: { pretty?: boolean; destination?: NodeJS.WritableStream } = {},
): Logger {
  const pretty = opts.pretty ?? (process.stdout.isTTY === true && !process.env.CI)
  if (pretty) {
    return pino({
      level,
      transport: { target: 'pino-pretty', options: { colorize: true, destination: 2 } },
    })
  }
  return pino({ level }, (opts.destination ?? process.stdout) as pino.DestinationStream)
}
