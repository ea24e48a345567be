import { parseRecordUri } from '../src/api/params.ts'
import { loadReadDataset } from './lib/api-data.ts'
import {
  CLI,
  freePort,
  type NodeChild,
  nodeFlagsFromEnv,
  spawnNode,
  waitForHttp,
} from './lib/child.ts'
import { benchEnv, count, setting } from './lib/env.ts'
import { listPaths, autocannonLoad as load } from './lib/http-load.ts'
import { openBenchRuntime } from './lib/ingest-kit.ts'
import { pacedLoad } from './lib/paced.ts'
import { checkpoint, createTempDatabase, rawClient } from './lib/pg.ts'
import { type Check, type Row, row, type ScenarioResult } from './lib/report.ts'
import { isMain, machineInfo, runAsMain } from './lib/scenario.ts'
import { NSIDS } from './lib/traffic.ts'

// The read API at scale: `prompt-appview serve` (its own process) over a Postgres of
// `prompts` prompts, driven by autocannon from this process. Point lookups and list pages
// at the most requests per second 100 connections get, then latency at a fixed 1,000
// requests per second; the baseline is a bare Fastify route answering a constant, in its
// own process, under the same load.

export interface ReadApiOptions {
  serverUrl: string
  prompts: number
  seedPrompts: number
  durationS: number
  connections: number
  rate: number
  log?: (msg: string) => void
}

export function readApiOptionsFromEnv(): ReadApiOptions {
  return {
    serverUrl: benchEnv.serverUrl,
    prompts: count('BENCH_API_PROMPTS', 500_000),
    seedPrompts: count('BENCH_API_SEED_PROMPTS', 10_000),
    durationS: setting('BENCH_API_DURATION_S', 10),
    connections: Math.round(setting('BENCH_API_CONNECTIONS', 100)),
    rate: Math.round(setting('BENCH_API_RATE', 1000)),
    log: (m) => console.log(`[read-api] ${m}`),
  }
}

async function withServer<T>(child: NodeChild, base: string, fn: () => Promise<T>): Promise<T> {
  try {
    await waitForHttp(`${base}/readyz`, child)
    return await fn()
  } finally {
    await child.stop()
  }
}

function isAgentFilter(uri: string): boolean {
  try {
    parseRecordUri(uri, 'agent', [NSIDS.agent])
    return true
  } catch {
    return false
  }
}

export async function runReadApi(o: ReadApiOptions): Promise<ScenarioResult> {
  const log = o.log ?? (() => {})
  const startedAt = new Date().toISOString()
  const t0 = performance.now()
  const db = await createTempDatabase(o.serverUrl, 'read')
  const rows: Row[] = []
  const checks: Check[] = []
  const details: Record<string, unknown> = {}
  try {
    const rt = await openBenchRuntime({ kind: 'postgres', url: db.url })
    try {
      details.load = await loadReadDataset(rt, db.url, o.prompts, o.seedPrompts, log)
    } finally {
      await rt.close()
    }
    const client = rawClient(db.url)
    const keys = await client<{ did: string; rkey: string; agent_uri: string | null }[]>`
      SELECT did, rkey, CASE WHEN agent_did IS NOT NULL THEN agent_uri END AS agent_uri
      FROM prompts TABLESAMPLE SYSTEM (5)
      WHERE NOT deleted AND NOT hidden LIMIT 20000`
    const [{ visible }] = await client<{ visible: number }[]>`
      SELECT count(*)::int AS visible FROM prompts WHERE NOT deleted AND NOT hidden`
    await client.end()
    details.visiblePrompts = visible
    await checkpoint(o.serverUrl)
    const lookupPaths = keys.map((k) => `/v1/prompts/${k.did}/${k.rkey}`)
    const dids = [...new Set(keys.map((k) => k.did))]
    // Only agent at-uris the API's agent filter accepts: the generator's invalid prompts
    // carry malformed ones, which would measure 400s.
    const agents = [...new Set(keys.map((k) => k.agent_uri))].filter(
      (a): a is string => a !== null && isAgentFilter(a),
    )

    const port = await freePort()
    const base = `http://127.0.0.1:${port}`
    const profile = process.env.BENCH_API_PROFILE
    const api = spawnNode(
      [CLI, 'serve'],
      {
        DATABASE_URL: db.url,
        HOST: '127.0.0.1',
        PORT: String(port),
        LOG_LEVEL: 'warn',
        // The API's per-client limit would refuse a load generator on one address.
        RATE_LIMIT_PER_MINUTE: '10000000',
      },
      {
        execArgv: [
          ...nodeFlagsFromEnv('BENCH_NODE_FLAGS'),
          ...(profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : []),
        ],
      },
    )
    const product = await withServer(api, base, async () => {
      const lists = await listPaths(base, dids, agents)
      const sample = await fetch(base + lookupPaths[0])
      checks.push({
        name: 'a looked-up prompt comes back whole',
        ok:
          sample.status === 200 &&
          typeof ((await sample.json()) as { record?: unknown }).record === 'object',
        detail: `HTTP ${sample.status}`,
      })
      log(`${lookupPaths.length} lookup keys, ${lists.length} list pages; warming up`)
      await load(base, lookupPaths, { ...o, durationS: 3 })
      const lookups = await load(base, lookupPaths, o)
      log(`lookups ${lookups.reqPerS.toFixed(0)} req/s`)
      const listsMax = await load(base, lists, o)
      log(`lists ${listsMax.reqPerS.toFixed(0)} req/s`)
      const lookupsFixed = await load(base, lookupPaths, o, o.rate)
      const listsFixed = await load(base, lists, o, o.rate)
      log(`-R ${o.rate}: lookups p99 ${lookupsFixed.p99} ms, lists p99 ${listsFixed.p99} ms`)
      const lookupsPaced = await pacedLoad(base, lookupPaths, o)
      const listsPaced = await pacedLoad(base, lists, o)
      log(
        `paced ${o.rate}/s: lookups p99 ${lookupsPaced.p99.toFixed(1)} ms, lists p99 ${listsPaced.p99.toFixed(1)} ms`,
      )
      const rssMb = api.rssMb()
      return {
        lookups,
        lists: listsMax,
        lookupsFixed,
        listsFixed,
        lookupsPaced,
        listsPaced,
        rssMb,
        listPages: lists.length,
      }
    })
    const bport = await freePort()
    const bbase = `http://127.0.0.1:${bport}`
    const bare = spawnNode([new URL('./lib/bare-server.ts', import.meta.url).pathname], {
      PORT: String(bport),
    })
    const baseline = await withServer(bare, bbase, async () => {
      await load(bbase, lookupPaths, { ...o, durationS: 3 })
      const max = await load(bbase, lookupPaths, o)
      const fixed = await load(bbase, lookupPaths, o, o.rate)
      const paced = await pacedLoad(bbase, lookupPaths, o)
      log(`bare route ${max.reqPerS.toFixed(0)} req/s`)
      return { max, fixed, paced }
    })
    details.product = product
    details.baseline = baseline
    for (const [name, r] of Object.entries({ ...product, ...baseline })) {
      if (typeof r === 'object' && r && 'non2xx' in r) {
        checks.push({
          name: `${name}: every answer 2xx`,
          ok: r.non2xx === 0 && r.errors === 0 && r.total > 0,
          detail: `${r.total} answers, ${r.non2xx} non-2xx, ${r.errors} errors`,
        })
      } else if (typeof r === 'object' && r && 'failed' in r) {
        checks.push({
          name: `${name}: every answer 200`,
          ok: r.failed === 0 && r.ok === r.sent,
          detail: `${r.ok} of ${r.sent} answered 200`,
        })
      }
    }
    const lookupRatio = product.lookups.reqPerS / baseline.max.reqPerS
    const r = o.rate
    rows.push(
      row(
        'point lookups, most',
        product.lookups.reqPerS,
        'req/s',
        '>= 40% of baseline',
        lookupRatio >= 0.4,
        baseline.max.reqPerS,
      ),
      row('list pages, most', product.lists.reqPerS, 'req/s', '(none)', null, baseline.max.reqPerS),
      row(
        `lookups p50, paced ${r}/s`,
        product.lookupsPaced.p50,
        'ms',
        '(none)',
        null,
        baseline.paced.p50,
      ),
      row(
        `lookups p99, paced ${r}/s`,
        product.lookupsPaced.p99,
        'ms',
        '<= 15 ms',
        product.lookupsPaced.p99 <= 15,
        baseline.paced.p99,
      ),
      row(
        `lists p50, paced ${r}/s`,
        product.listsPaced.p50,
        'ms',
        '(none)',
        null,
        baseline.paced.p50,
      ),
      row(
        `lists p99, paced ${r}/s`,
        product.listsPaced.p99,
        'ms',
        '<= 15 ms',
        product.listsPaced.p99 <= 15,
        baseline.paced.p99,
      ),
      row(
        `lookups p50, autocannon -R ${r}`,
        product.lookupsFixed.p50,
        'ms',
        '(none)',
        null,
        baseline.fixed.p50,
      ),
      row(
        `lookups p99, autocannon -R ${r}`,
        product.lookupsFixed.p99,
        'ms',
        '<= 15 ms',
        product.lookupsFixed.p99 <= 15,
        baseline.fixed.p99,
      ),
      row(
        `lists p99, autocannon -R ${r}`,
        product.listsFixed.p99,
        'ms',
        '<= 15 ms',
        product.listsFixed.p99 <= 15,
        baseline.fixed.p99,
      ),
    )
  } finally {
    await db.drop()
  }
  return {
    scenario: 'read-api',
    title: `Read API at ${o.prompts.toLocaleString('en-US')} prompts`,
    startedAt,
    durationS: (performance.now() - t0) / 1000,
    machine: await machineInfo(o.serverUrl),
    params: { ...o, log: undefined, contentBytes: benchEnv.contentBytes },
    rows,
    checks,
    details,
    notes: [
      `autocannon in the benchmark process, ${o.connections} connections, ${o.durationS} s per measurement; the API (\`prompt-appview serve\`), Postgres and autocannon share the machine`,
      'lookups are random visible prompts (full record in the answer); list pages mix every flag filter, did and agent filters, first pages and cursors up to 4 pages deep',
      `autocannon -R lets each connection send its per-second quota back to back at the top of every second (100 connections x ${Math.round(o.rate / o.connections)} requests at once), and its coordinated-omission correction assumes 1 ms between requests; "paced" sends one request every ${(1000 / o.rate).toFixed(1)} ms over ${o.connections} keep-alive connections and times each from when it was due`,
    ],
  }
}

if (isMain(import.meta.url)) await runAsMain(() => runReadApi(readApiOptionsFromEnv()))
