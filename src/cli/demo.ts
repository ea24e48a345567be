import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Logger } from 'pino'
import { createGenerator } from '../../demo-network/generator.ts'
import { type JetstreamJson, startJetstreamServer } from '../../demo-network/jetstream-server.ts'
import { demoDictionary, startJetstreamV2Server } from '../../demo-network/jetstream-v2-server.ts'
import type { Config } from '../config/config.ts'
import { jetstreamSourceFor } from '../ingest/jetstream/wire.ts'
import { openRuntime, prepareIngest, startServer, uiAddress } from './runtime.ts'
import { runUntilSignal, type Shutdown } from './shutdown.ts'

export interface DemoOptions {
  rate: number
  dids: number
  /** Stop generating after this many events; null: until stopped. */
  events: number | null
  /** The Jetstream wire the simulated network speaks (default v1). */
  wire?: 'v1' | 'v2'
  /** The local Jetstream's port; 0 or absent: a free one. */
  jetstreamPort?: number
}

const TICK_MS = 100
const CATCH_UP = 4
// The local Jetstream's replay window: two minutes of events but at most 8M characters of JSON
// (16 MB of heap, at two bytes a character past Latin-1), so the demo stays flat under the 256 MB
// heap at any --rate; an indexer further behind skips what was trimmed, as with a real Jetstream.
const LOG_WINDOW_SECONDS = 120
const LOG_MAX_CHARS = 8 << 20

/**
 * A simulated network on loopback: a Jetstream-compatible server fed by the demo generator
 * in real time, and the indexer consuming it exactly as it would consume the real one.
 * Without DATABASE_URL the data lives in a PGlite directory of its own under the system temp
 * dir, removed on exit: a demo never mixes with a real DATA_DIR, and on disk (unlike PGlite
 * in memory, whose files live on the JS heap) a run of hours does not grow the heap.
 */
export function demoCommand(config: Config, opts: DemoOptions): Promise<number> {
  return runUntilSignal(config.logLevel, (logger, shutdown) =>
    startDemo(config, opts, logger, shutdown),
  )
}

/**
 * The network and the data directory are opened before the runtime that uses them, so they
 * close after it (the database before its directory goes).
 */
async function startDemo(config: Config, opts: DemoOptions, logger: Logger, shutdown: Shutdown) {
  const logBounds = {
    maxLogEvents: opts.rate * LOG_WINDOW_SECONDS,
    maxLogBytes: LOG_MAX_CHARS,
    port: opts.jetstreamPort ?? 0,
  }
  const server =
    opts.wire === 'v2'
      ? await startJetstreamV2Server({ ...logBounds, dictionary: demoDictionary() })
      : await startJetstreamServer(logBounds)
  shutdown.add('demo network', () => server.close())
  const tempDir = config.databaseUrl ? null : mkdtempSync(join(tmpdir(), 'prompt-appview-demo-'))
  if (tempDir) {
    const removeTemp = () => rmSync(tempDir, { recursive: true, force: true })
    // Also on a hard exit (second signal, shutdown deadline, an uncaught error).
    process.once('exit', removeTemp)
    shutdown.add('demo data directory', removeTemp)
  }
  const demoConfig: Config = {
    ...config,
    source: 'jetstream',
    jetstreamUrl: server.url,
    dataDir: tempDir ?? config.dataDir,
  }
  const rt = await openRuntime(demoConfig, { migrate: true, logger, shutdown })
  // The simulated network is its own naming authority: its identity events are taken as
  // verified, which is what a local resolver answers for it.
  const source = jetstreamSourceFor(rt.ctx, async (_did, claimed) => claimed, {
    backoffBaseMs: 200,
  })
  const prepared = await prepareIngest(rt, source)
  const served = { source: source.name, key: prepared.key, gap: () => source.gap ?? null }
  const app = await startServer(rt, served, { readApi: true })
  const ingest = prepared.start()
  const feeder = startFeeder(server, opts)
  shutdown.add('demo feeder', feeder.stop)
  const progress = setInterval(() => {
    logger.info(
      { generated: feeder.produced(), indexed: ingest.pipeline.committedEvents },
      'demo progress',
    )
  }, 10_000)
  shutdown.add('demo progress log', () => clearInterval(progress))
  const ui = uiAddress(app, config.host)
  logger.info(
    {
      ui,
      api: `${ui}v1/stats`,
      rate: opts.rate,
      dids: opts.dids,
      dataDir: tempDir ?? 'DATABASE_URL',
      replayWindow: `${LOG_WINDOW_SECONDS} s, at most ${LOG_MAX_CHARS >> 20} M characters`,
      wire: opts.wire ?? 'v1',
      jetstream: server.url,
    },
    `demo running: open ${ui} in a browser, or try /v1/stats, /v1/prompts?flag=staleTemplate, /metrics`,
  )
}

/**
 * Feeds the local Jetstream from the generator, releasing events as the wall clock reaches
 * their time_us, so the stream is real-time. After the loop was busy (startup, a long GC)
 * the generator catches up at most CATCH_UP times faster than real time: a tick never
 * builds seconds of events at once.
 */
function startFeeder(
  server: { connections: number; append(events: JetstreamJson[]): void },
  opts: DemoOptions,
): { produced: () => number; stop: () => void } {
  const gen = createGenerator({
    seed: 20261130,
    dids: opts.dids,
    startTimeUs: Date.now() * 1000,
    meanIntervalUs: Math.max(1, Math.round(1e6 / opts.rate)),
    contentBytes: { min: 2048, max: 24_576 },
  })
  let produced = 0
  let next = gen.next()
  const perTick = Math.max(1, Math.ceil((opts.rate * TICK_MS * CATCH_UP) / 1000))
  const timer = setInterval(() => {
    // The indexer starts at the live tip: what the network says before it connects is lost.
    if (server.connections === 0) return
    const now = Date.now() * 1000
    const batch = []
    while (
      next.time_us <= now &&
      batch.length < perTick &&
      (opts.events === null || produced < opts.events)
    ) {
      batch.push(next)
      produced++
      next = gen.next()
    }
    if (batch.length > 0) server.append(batch as unknown as JetstreamJson[])
  }, TICK_MS)
  return { produced: () => produced, stop: () => clearInterval(timer) }
}
