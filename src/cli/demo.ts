import type { FastifyInstance } from 'fastify'
import type { Config } from '../config.ts'
import { createGenerator } from '../demo/generator.ts'
import { type JetstreamJson, startJetstreamServer } from '../demo/jetstream-server.ts'
import { createJetstreamSource, jetstreamOptionsFromConfig } from '../ingest/jetstream.ts'
import {
  type IngestHandle,
  onShutdownSignal,
  openRuntime,
  startIngest,
  startServer,
  uiAddress,
} from './runtime.ts'

export interface DemoOptions {
  rate: number
  dids: number
  /** Stop generating after this many events; null: until stopped. */
  events: number | null
}

const TICK_MS = 100

/**
 * A simulated network on loopback: a Jetstream-compatible server fed by the demo generator
 * in real time, and the indexer consuming it exactly as it would consume the real one.
 * Without DATABASE_URL the data lives in memory: a demo never mixes with a real DATA_DIR.
 */
export async function demoCommand(config: Config, opts: DemoOptions): Promise<number> {
  const server = await startJetstreamServer({ maxLogEvents: Math.max(10_000, opts.rate * 120) })
  const demoConfig: Config = { ...config, source: 'jetstream', jetstreamUrl: server.url }
  const rt = await openRuntime(demoConfig, { migrate: true, memory: !config.databaseUrl })
  const { logger } = rt.ctx
  const gen = createGenerator({
    seed: 20261130,
    dids: opts.dids,
    startTimeUs: Date.now() * 1000,
    meanIntervalUs: Math.max(1, Math.round(1e6 / opts.rate)),
    contentBytes: { min: 2048, max: 24_576 },
  })
  // The simulated network is its own naming authority: its identity events are taken as
  // verified, which is what a local resolver answers for it.
  const source = createJetstreamSource({
    ...jetstreamOptionsFromConfig(demoConfig),
    logger,
    metrics: rt.ctx.metrics,
    verifyHandle: async (_did, claimed) => claimed,
    backoffBaseMs: 200,
  })
  let produced = 0
  let next = gen.next()
  // Release events as the wall clock reaches their time_us, so the stream is real-time.
  const feeder = setInterval(() => {
    const now = Date.now() * 1000
    const batch = []
    while (next.time_us <= now && (opts.events === null || produced < opts.events)) {
      batch.push(next)
      produced++
      next = gen.next()
    }
    if (batch.length > 0) server.append(batch as unknown as JetstreamJson[])
  }, TICK_MS)
  const progress = setInterval(() => {
    logger.info({ generated: produced, indexed: ingest.pipeline.committedEvents }, 'demo progress')
  }, 10_000)

  const ingest: IngestHandle = await startIngest(rt, source)
  let app: FastifyInstance | null = null
  onShutdownSignal(logger, async () => {
    clearInterval(feeder)
    clearInterval(progress)
    await ingest.stop()
    await app?.close()
    await server.close()
    await rt.close()
  })
  app = await startServer(rt, { source: 'jetstream', key: ingest.key }, { readApi: true })
  const ui = uiAddress(app, config.host)
  logger.info(
    { ui, api: `${ui}v1/stats`, rate: opts.rate, dids: opts.dids },
    `demo running: open ${ui} in a browser, or try /v1/stats, /v1/prompts?flag=staleTemplate, /metrics`,
  )
  return -1
}
