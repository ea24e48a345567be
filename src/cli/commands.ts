import { type Config, ConfigError, loadConfig } from '../config/config.ts'
import { int, oneOf, type Parse } from '../config/parse.ts'
import { AppError } from '../faults/errors.ts'
import { type CommandOptions, parseCommandLine } from './args.ts'
import { COMMAND_NAMES, DEMO_RATE, helpText } from './help.ts'
import { applyServeHeapGrowing } from './node-flags.ts'
import { openRuntime, prepareIngest, type Runtime, startServer } from './runtime.ts'
import { runUntilSignal } from './shutdown.ts'

async function main(argv: string[]): Promise<number> {
  const line = parseCommandLine(argv)
  const command = line.command ?? 'run'
  if (line.help || command === 'help') {
    process.stdout.write(helpText(line.help ? line.command : (line.positionals[0] ?? null)))
    return 0
  }
  if (!COMMAND_NAMES.includes(command)) {
    process.stderr.write(`unknown command ${JSON.stringify(command)}\n\n${helpText(null)}`)
    return 2
  }
  const config = loadConfig(line.settings)
  if (command === 'run' || command === 'ingest' || command === 'serve')
    return runCommand(command, config)
  return oneShotCommand(command, config, line.options)
}

/** The commands that do one job and exit, each loaded only when it runs. */
async function oneShotCommand(
  command: string,
  config: Config,
  own: CommandOptions,
): Promise<number> {
  switch (command) {
    case 'migrate': {
      const rt = await openRuntime(config, { migrate: true })
      rt.ctx.logger.info('migrations applied')
      await rt.close()
      return 0
    }
    // Loaded only by the command that runs them: the demo network, the backfill's repo
    // fetcher and the export's file writers are no part of a `serve` or `run` process.
    case 'backfill':
      return (await import('./backfill.ts')).backfillCommand(config, {
        dids: own.did ?? [],
        concurrency: positiveInt(own.concurrency ?? '4', '--concurrency'),
        reset: own.reset === true,
      })
    case 'export':
      return (await import('./export.ts')).exportCommand(config, {
        out: own.out ?? null,
        format: own.format ?? 'parquet',
        revisions: own.revisions === true,
      })
    default: // demo, the last of COMMAND_NAMES
      return (await import('./demo.ts')).demoCommand(config, {
        rate: positiveInt(own.rate ?? String(DEMO_RATE), '--rate'),
        dids: positiveInt(own.dids ?? '50', '--dids'),
        events: own.events ? positiveInt(own.events, '--events') : null,
        wire: flag('--wire', own.wire ?? 'v1', oneOf(['v1', 'v2'] as const), 'must be v1 or v2'),
        // 0, the default, lets the system pick a free port.
        jetstreamPort: flag('--jetstream-port', own['jetstream-port'] ?? '0', int(0, 65535)),
      })
  }
}

/** run, ingest, serve: everything opened on the runtime registers its close there. */
function runCommand(command: 'run' | 'ingest' | 'serve', config: Config): Promise<number> {
  return runUntilSignal(config.logLevel, async (logger, shutdown) => {
    if (command === 'serve') {
      const flag = applyServeHeapGrowing()
      if (flag) logger.info({ flag }, 'V8 heap growing set for a reader')
    }
    const rt = await openRuntime(config, { migrate: command !== 'serve', logger, shutdown })
    if (command === 'serve') await startServer(rt, null, { readApi: true })
    else await startIngesting(rt, { readApi: command !== 'ingest' })
  })
}

async function startIngesting(rt: Runtime, opts: { readApi: boolean }): Promise<void> {
  // The sources (WebSocket clients, the firehose verifier, DID resolution) load only in a
  // process that ingests: `serve` never carries them.
  const { createSource } = await import('./create-source.ts')
  const { HandleLookups } = await import('../indexer/handle-lookups.ts')
  const { source, verifyHandle } = await createSource(rt.ctx)
  const prepared = await prepareIngest(rt, source)
  await startServer(
    rt,
    { source: source.name, key: prepared.key, gap: () => source.gap ?? null },
    opts,
  )
  const lookups = verifyHandle ? new HandleLookups(rt.ctx, verifyHandle) : null
  if (lookups) rt.shutdown.add('handle lookups', () => lookups.stop())
  const onNewDids = lookups ? (dids: string[]) => lookups.enqueue(dids) : undefined
  prepared.start({ onNewDids }).done.catch((err) => {
    rt.ctx.logger.error({ err }, 'ingest failed')
    process.kill(process.pid, 'SIGTERM')
    process.exitCode = 1
  })
}

/** A command's own flag, checked by a config parser, refused as the config refuses its own. */
function flag<T>(name: string, raw: string, parse: Parse<T>, says?: string): T {
  try {
    return parse(raw)
  } catch (err) {
    throw new ConfigError([`${name}=${JSON.stringify(raw)}: ${says ?? (err as Error).message}`])
  }
}

const positiveInt = (raw: string, name: string) =>
  flag(name, raw, int(1, Infinity), 'must be a positive integer')

/** The causes under an error, one line each: a driver's "Failed query" says why only there. */
function causes(err: unknown): string {
  let text = ''
  for (let c = (err as Error)?.cause, n = 0; c !== undefined && n < 5; c = (c as Error)?.cause, n++)
    text += `\ncaused by: ${(c as Error)?.message || (c as { code?: string })?.code || String(c)}`
  return text
}

/** Runs one command line; the process's exit code is set when it is done. */
export function runMain(argv: string[]): Promise<void> {
  return main(argv).then(
    (code) => {
      if (code >= 0) process.exitCode = code
    },
    (err) => {
      // A refused setting or a known fault is the operator's to fix: its message says how.
      const known = err instanceof ConfigError || err instanceof AppError
      const text = known ? err.message : `${(err as Error)?.stack ?? String(err)}${causes(err)}`
      process.stderr.write(`prompt-appview: ${text}\n`)
      process.exitCode = 1
    },
  )
}
