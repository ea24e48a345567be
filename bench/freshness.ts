import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { startJetstreamServer } from '../src/demo/jetstream-server.ts'
import { nodeFlagsFromEnv } from './lib/child.ts'
import { type BenchOptions, benchOptionsFromEnv, count, setting } from './lib/env.ts'
import { checkpoint, createTempDatabase } from './lib/pg.ts'
import { productReady, spawnRun } from './lib/product.ts'
import { row, type ScenarioResult } from './lib/report.ts'
import { isMain, runAsMain } from './lib/scenario.ts'
import { scenarioResult, startScenario } from './lib/scenario-run.ts'
import { sleep, summarize, until } from './lib/stats.ts'
import { isMatching, isSent, liveGenerator } from './lib/traffic.ts'

// Freshness: `prompt-appview run` (its own process) follows a local Jetstream that this
// process feeds at a steady rate. Each matching event is timed from when it is handed to
// the Jetstream server until its change shows up in the API's change feed (/v1/changes,
// polled every few milliseconds): a change row commits with the record, so that is when
// lookups see it too.

export interface FreshnessOptions extends BenchOptions {
  rate: number
  seconds: number
  warmupS: number
  pollMs: number
  /** After the stream stops: how long the feed must stay quiet before giving up on the rest. */
  quietMs: number
  dids: number
}

export function freshnessOptionsFromEnv(): FreshnessOptions {
  return {
    ...benchOptionsFromEnv('freshness'),
    rate: Math.round(setting('BENCH_FRESHNESS_RATE', 2000)),
    seconds: count('BENCH_FRESHNESS_SECONDS', 30),
    warmupS: setting('BENCH_FRESHNESS_WARMUP_S', 5),
    pollMs: setting('BENCH_FRESHNESS_POLL_MS', 5),
    quietMs: 3000,
    dids: count('BENCH_FRESHNESS_DIDS', 1000),
  }
}

/** A PLC directory that knows no DID: handle checks fail fast instead of going online. */
async function startEmptyPlc(): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer((_req, res) =>
    res.writeHead(404).end('{"message":"DID not registered"}'),
  )
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((r) => server.close(() => r())),
  }
}

interface ChangeLine {
  seq: number
  op: string
  uri: string
  cid: string | null
}

export async function runFreshness(o: FreshnessOptions): Promise<ScenarioResult> {
  const log = o.log ?? (() => {})
  const run = startScenario()
  const { rows, checks, details } = run
  const db = await createTempDatabase(o.serverUrl, 'fresh')
  await checkpoint(o.serverUrl)
  const plc = await startEmptyPlc()
  const jetstream = await startJetstreamServer()
  const product = await spawnRun(
    {
      databaseUrl: db.url,
      jetstreamUrl: jetstream.url,
      plcUrl: plc.url,
      env: { RATE_LIMIT_PER_MINUTE: '10000000' },
    },
    nodeFlagsFromEnv('BENCH_NODE_FLAGS'),
  )
  const { base, child: app } = product
  try {
    await productReady(product)
    await until(() => jetstream.connections > 0, 30_000, 'the indexer to connect')
    // Keys of events in flight -> when they left the source (ms, this process's clock).
    const inflight = new Map<string, { at: number; counted: boolean }>()
    const latencies: number[] = []
    let sent = 0
    let matching = 0
    let observed = 0
    let running = true
    let since = 0
    let polls = 0
    let lastSeen = performance.now()
    const observer = (async () => {
      // After the stream stops, stragglers get until the feed has been quiet for a while:
      // events superseded within a batch never show up and must not hold this forever.
      while (running || (inflight.size > 0 && performance.now() - lastSeen < o.quietMs)) {
        const res = await fetch(`${base}/v1/changes?since=${since}&limit=10000`)
        const now = performance.now()
        polls++
        if (res.status !== 200) throw new Error(`/v1/changes: HTTP ${res.status}`)
        const text = await res.text()
        for (const line of text.split('\n')) {
          if (!line) continue
          const c = JSON.parse(line) as ChangeLine
          since = Math.max(since, c.seq)
          const key = `${c.uri} ${c.op === 'delete' ? 'delete' : c.cid}`
          const hit = inflight.get(key)
          if (!hit) continue
          inflight.delete(key)
          observed++
          lastSeen = now
          if (hit.counted) latencies.push(now - hit.at)
        }
        await sleep(o.pollMs)
      }
    })()
    const gen = liveGenerator(o.dids, o.rate)
    const start = performance.now()
    const end = start + (o.warmupS + o.seconds) * 1000
    const measureFrom = start + o.warmupS * 1000
    while (performance.now() < end) {
      const now = performance.now()
      const due = Math.floor(((now - start) / 1000) * o.rate)
      const batch: string[] = []
      while (sent < due) {
        const ev = gen.next()
        if (!isSent(ev)) continue
        sent++
        batch.push(JSON.stringify(ev))
        if (isMatching(ev) && ev.kind === 'commit') {
          matching++
          const c = ev.commit
          const key = `at://${ev.did}/${c.collection}/${c.rkey} ${c.operation === 'delete' ? 'delete' : c.cid}`
          inflight.set(key, { at: now, counted: now >= measureFrom })
        }
      }
      jetstream.append(batch)
      await sleep(2)
    }
    const elapsedS = (performance.now() - start) / 1000
    running = false
    log(`sent ${sent} events (${(sent / elapsedS).toFixed(0)}/s), waiting for the last changes`)
    await observer
    const s = summarize(latencies)
    details.latencyMs = s
    details.sent = sent
    details.sentPerS = sent / elapsedS
    details.matching = matching
    details.observed = observed
    details.unobserved = inflight.size
    details.polls = polls
    details.appRssMb = app.rssMb()
    checks.push({
      name: 'changes of the events sent show up in the feed',
      ok: latencies.length > 0 && observed >= matching * 0.8,
      detail: `${observed} of ${matching} matching events seen as a change (the rest were superseded within a batch, ignored as replays or hidden)`,
    })
    rows.push(
      row('p50 source -> API', s.p50, 'ms', '(none)', null),
      row('p99 source -> API', s.p99, 'ms', '<= 200 ms', s.p99 <= 200),
      row('max source -> API', s.max, 'ms', '(none)', null),
      row('rate held', sent / elapsedS, 'ev/s', `${o.rate} ev/s`, sent / elapsedS >= o.rate * 0.97),
    )
  } finally {
    await app.stop()
    await jetstream.close()
    await plc.close()
    await db.drop()
  }
  return scenarioResult(run, o, {
    scenario: 'freshness',
    title: `Freshness at ${o.rate.toLocaleString('en-US')} events/s`,
    notes: [
      `\`prompt-appview run\` with default batching (1,000 events or 20 ms); ${o.seconds} s measured after ${o.warmupS} s of warm-up; the feed is polled every ${o.pollMs} ms, so figures are late by up to that much`,
    ],
  })
}

if (isMain(import.meta.url)) await runAsMain(() => runFreshness(freshnessOptionsFromEnv()))
