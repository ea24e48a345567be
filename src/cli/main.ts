#!/usr/bin/env node
import type { FastifyInstance } from 'fastify'
import { ConfigError, loadConfig } from '../config.ts'
import { AppError } from '../errors.ts'
import { HandleLookups } from '../indexer/handle-lookups.ts'
import { createSource } from '../ingest/create-source.ts'
import type { IngestGap } from '../ingest/source.ts'
import { parseArgs, takeOptions } from './args.ts'
import { backfillCommand } from './backfill.ts'
import { demoCommand } from './demo.ts'
import { COMMAND_NAMES, helpText } from './help.ts'
import {
  type IngestHandle,
  onShutdownSignal,
  openRuntime,
  startIngest,
  startServer,
} from './runtime.ts'

async function main(argv: string[]): Promise<number> {
  const args = parseArgs(argv)
  const command = args.command ?? 'run'
  if (args.help || command === 'help') {
    process.stdout.write(helpText(args.help ? args.command : (args.positionals[0] ?? null)))
    return 0
  }
  if (!COMMAND_NAMES.includes(command)) {
    process.stderr.write(`unknown command ${JSON.stringify(command)}\n\n${helpText(null)}`)
    return 2
  }
  const own = takeOptions(args, ['did', 'concurrency', 'reset', 'rate', 'dids', 'events', 'wire'])
  const config = loadConfig(args.flags)

  switch (command) {
    case 'migrate': {
      const rt = await openRuntime(config, { migrate: true })
      rt.ctx.logger.info('migrations applied')
      await rt.close()
      return 0
    }
    case 'backfill':
      return backfillCommand(config, {
        dids: own.did ?? [],
        concurrency: positiveInt(own.concurrency?.at(-1) ?? '4', '--concurrency'),
        reset: own.reset !== undefined,
      })
    case 'demo':
      return demoCommand(config, {
        rate: positiveInt(own.rate?.at(-1) ?? '500', '--rate'),
        dids: positiveInt(own.dids?.at(-1) ?? '50', '--dids'),
        events: own.events ? positiveInt(own.events.at(-1)!, '--events') : null,
        wire: demoWire(own.wire?.at(-1) ?? 'v1'),
      })
  }

  // run, ingest, serve
  const rt = await openRuntime(config, { migrate: command !== 'serve' })
  let ingest: IngestHandle | null = null
  let app: FastifyInstance | null = null
  let handles: HandleLookups | null = null
  onShutdownSignal(rt.ctx.logger, async () => {
    // Stop reading first and commit what was read, then stop answering, then the database.
    await ingest?.stop()
    await handles?.stop()
    await app?.close()
    await rt.close()
  })
  let gap: (() => IngestGap | null) | undefined
  if (command !== 'serve') {
    const { source, verifyHandle } = createSource(rt.ctx)
    gap = () => source.gap ?? null
    const lookups = verifyHandle ? new HandleLookups(rt.ctx, rt.deps, verifyHandle) : null
    handles = lookups
    ingest = await startIngest(rt, source, {
      onNewDids: lookups ? (dids) => lookups.enqueue(dids) : undefined,
    })
    ingest.done.catch((err) => {
      rt.ctx.logger.error({ err }, 'ingest failed')
      process.kill(process.pid, 'SIGTERM')
      process.exitCode = 1
    })
  }
  const served = ingest ? { source: ingest.pipeline.source, key: ingest.key, gap } : null
  app = await startServer(rt, served, {
    readApi: command !== 'ingest',
  })
  return -1 // keep running until a signal
}

function demoWire(raw: string): 'v1' | 'v2' {
  if (raw === 'v1' || raw === 'v2') return raw
  throw new ConfigError([`--wire=${JSON.stringify(raw)}: must be v1 or v2`])
}

function positiveInt(raw: string, name: string): number {
  const n = Number(raw)
  if (!Number.isInteger(n) || n < 1)
    throw new ConfigError([`${name}=${JSON.stringify(raw)}: must be a positive integer`])
  return n
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code
  },
  (err) => {
    if (err instanceof ConfigError || err instanceof AppError) {
      process.stderr.write(`prompt-appview: ${err.message}\n`)
    } else {
      process.stderr.write(`prompt-appview: ${(err as Error)?.stack ?? String(err)}\n`)
    }
    process.exitCode = 1
  },
)
