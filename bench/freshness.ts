import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { type JetstreamServer, startJetstreamServer } from '../demo-network/jetstream-server.ts'
import { nodeFlagsFromEnv } from '../test/helpers/node-child.ts'
import { createTempDatabase } from '../test/helpers/pg-cluster.ts'
import { isSent } from '../test/helpers/traffic.ts'
import { type BenchOptions, benchOptionsFromEnv, count, setting } from './lib/env.ts'
import { type FeedChange, FeedTally } from './lib/feed-tally.ts'
import { checkpoint } from './lib/pg.ts'
import { productReady, spawnRun } from './lib/product.ts'
import { row, type ScenarioResult } from './lib/report.ts'
import { isMain, runAsMain } from './lib/scenario.ts'
import { scenarioResult, startScenario } from './lib/scenario-run.ts'
import { sleep, summarize, until } from './lib/stats.ts'
import { isMatching, liveGenerator } from './lib/traffic.ts'

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
  /** After the stream stops: how long the indexer gets to commit the last event sent. */
  drainMs: number
  dids: number
}

export function freshnessOptionsFromEnv(): FreshnessOptions {
  return {
    ...benchOptionsFromEnv('freshness'),
    rate: Math.round(setting('BENCH_FRESHNESS_RATE', 2000)),
    seconds: count('BENCH_FRESHNESS_SECONDS', 30),
    warmupS: setting('BENCH_FRESHNESS_WARMUP_S', 5),
    pollMs: setting('BENCH_FRESHNESS_POLL_MS', 5),
    drainMs: 60_000,
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

export async function runFreshness(o: FreshnessOptions): Promise<ScenarioResult> {
  const log = o.log ?? (() => {})
  const run = startScenario()
  const { rows, checks, details } = run
  const db = await createTempDatabase(o.serverUrl, 'bench_fresh')
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
    const tally = new FeedTally()
    const feed = { running: true, lastUs: 0, polls: 0 }
    const observer = observeFeed(base, tally, feed, o)
    const { sent, elapsedS } = await sendPaced(jetstream, tally, feed, o)
    feed.running = false
    log(`sent ${sent} events (${(sent / elapsedS).toFixed(0)}/s), waiting for the last changes`)
    await observer
    const s = summarize(tally.latencies)
    const { matching } = tally
    Object.assign(details, {
      latencyMs: s,
      sent,
      sentPerS: sent / elapsedS,
      matching,
      observed: tally.observed,
      superseded: tally.superseded,
      cancelled: tally.cancelled,
      hidden: tally.hidden,
      heldByAccount: tally.heldByAccount,
      unchanged: tally.unchanged,
      unobserved: tally.unobserved,
      missing: tally.missing(20),
      polls: feed.polls,
      appRssMb: app.rssMb(),
    })
    checks.push({
      name: 'every matching event sent shows up in the feed, or a later write of its record does',
      ok: tally.latencies.length > 0 && tally.unobserved === 0,
      detail: `of ${matching} matching events, ${tally.observed} seen as a change, ${tally.superseded} superseded by a later write of the same record seen in its batch, ${tally.cancelled} cancelled by a delete in their batch (created and deleted there), ${tally.hidden} hidden with their account (inactive at the end), ${tally.heldByAccount} not timed (sent to or in flight at an inactive account), ${tally.unchanged} unchanged (the content the feed already showed), ${tally.unobserved} missing`,
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

interface FeedState {
  running: boolean
  /** time_us of the last event sent. */
  lastUs: number
  polls: number
}

/** Feeds the Jetstream server at o.rate for the warm-up and the measured seconds. */
async function sendPaced(
  jetstream: JetstreamServer,
  tally: FeedTally,
  feed: FeedState,
  o: FreshnessOptions,
): Promise<{ sent: number; elapsedS: number }> {
  const gen = liveGenerator(o.dids, o.rate)
  let sent = 0
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
      feed.lastUs = ev.time_us
      batch.push(JSON.stringify(ev))
      if (ev.kind === 'account') tally.account(ev.did, ev.account.active)
      if (isMatching(ev) && ev.kind === 'commit') {
        const c = ev.commit
        tally.sent(
          `at://${ev.did}/${c.collection}/${c.rkey}`,
          c.operation,
          c.cid,
          now,
          now >= measureFrom,
        )
      }
    }
    jetstream.append(batch)
    await sleep(2)
  }
  return { sent, elapsedS: (performance.now() - start) / 1000 }
}

/**
 * Polls the change feed every o.pollMs while events are sent, and after that until one
 * poll began once the indexer had committed the last event sent (its cursor, /v1/stats):
 * that poll has every change there will be. Waiting for quiet instead gave up early
 * whenever the indexer stalled longer than the quiet period (a loaded machine), and
 * counted what it had not yet committed as missing. Only then can writes that cancelled out
 * within a batch be told from lost ones. o.drainMs bounds the wait.
 */
async function observeFeed(
  base: string,
  tally: FeedTally,
  feed: FeedState,
  o: FreshnessOptions,
): Promise<void> {
  let since = 0
  let stoppedAt: number | null = null
  for (;;) {
    if (!feed.running) stoppedAt ??= performance.now()
    const last =
      stoppedAt !== null && (tally.unobserved === 0 || (await cursorOf(base)) >= feed.lastUs)
    const res = await fetch(`${base}/v1/changes?since=${since}&limit=10000`)
    const now = performance.now()
    feed.polls++
    if (res.status !== 200) throw new Error(`/v1/changes: HTTP ${res.status}`)
    for (const line of (await res.text()).split('\n')) {
      if (!line) continue
      const c = JSON.parse(line) as FeedChange
      since = Math.max(since, c.seq)
      tally.seen(c, now)
    }
    if (last) return tally.settleEnd()
    if (stoppedAt !== null && now - stoppedAt > o.drainMs) return
    await sleep(o.pollMs)
  }
}

async function cursorOf(base: string): Promise<number> {
  const res = await fetch(`${base}/v1/stats`)
  if (res.status !== 200) throw new Error(`/v1/stats: HTTP ${res.status}`)
  const stats = (await res.json()) as { ingest: { cursor: number | null } }
  return stats.ingest.cursor ?? 0
}
