import { parseRecordUri } from '../src/api/params.ts'
import { CLI, nodeFlagsFromEnv } from '../test/helpers/node-child.ts'
import { createTempDatabase } from '../test/helpers/pg-cluster.ts'
import { loadReadDataset } from './lib/api-data.ts'
import { type BenchOptions, benchEnv, benchOptionsFromEnv, count, setting } from './lib/env.ts'
import { listPaths } from './lib/http-load.ts'
import { openBenchRuntime } from './lib/ingest-kit.ts'
import { checkpoint, rawClient } from './lib/pg.ts'
import { type PathSets, zipfPaths } from './lib/read-load.ts'
import { answerCheck, readRows } from './lib/read-rows.ts'
import { measureChildren } from './lib/read-server.ts'
import type { ScenarioResult } from './lib/report.ts'
import { isMain, runAsMain } from './lib/scenario.ts'
import { scenarioResult, startScenario } from './lib/scenario-run.ts'
import { NSIDS } from './lib/traffic.ts'

// The read API at scale: `prompt-appview serve` (its own process) over a Postgres of
// `prompts` prompts, driven by autocannon from this process. Point lookups (uniform and
// Zipf key choice) and list pages at the most requests per second 50 connections get, then
// latency at a steady 1,000 requests per second. The baseline is a plain Fastify +
// postgres.js server (one indexed SELECT per request, no features) on the same database,
// under the same load in the same run; a bare route answering a constant is the ceiling.

export interface ReadApiOptions extends BenchOptions {
  prompts: number
  seedPrompts: number
  durationS: number
  connections: number
  rate: number
  /** Parts each load is measured in, the servers taking turns (read-load.ts). */
  rounds: number
  /** An existing read-benchmark database: measured as it is, neither built nor dropped. */
  reuseUrl?: string
  /** Uncounted load before each part (read-load.ts); 0 where figures are not judged. */
  warmS?: number
}

export function readApiOptionsFromEnv(): ReadApiOptions {
  return {
    ...benchOptionsFromEnv('read-api'),
    prompts: count('BENCH_API_PROMPTS', 500_000),
    seedPrompts: count('BENCH_API_SEED_PROMPTS', 10_000),
    durationS: setting('BENCH_API_DURATION_S', 10),
    connections: Math.round(setting('BENCH_API_CONNECTIONS', 50)),
    rate: Math.round(setting('BENCH_API_RATE', 1000)),
    rounds: Math.max(1, Math.round(setting('BENCH_API_ROUNDS', 2))),
    reuseUrl: process.env.BENCH_API_DATABASE_URL || undefined,
  }
}

const libPath = (file: string) => new URL(`./lib/${file}`, import.meta.url).pathname

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
  const run = startScenario()
  const { rows, checks, details } = run
  const db = o.reuseUrl
    ? { url: o.reuseUrl, drop: async () => {} }
    : await createTempDatabase(o.serverUrl, 'bench_read')
  // postgres.js connects lazily: this client opens once the dataset is there.
  const sql = rawClient(db.url)
  try {
    if (!o.reuseUrl) {
      const rt = await openBenchRuntime({ kind: 'postgres', url: db.url })
      try {
        details.load = await loadReadDataset(rt, db.url, o.prompts, o.seedPrompts, log)
      } finally {
        await rt.close()
      }
    }
    const keys = await sql<{ did: string; rkey: string; agent_uri: string | null }[]>`
      SELECT did, rkey, CASE WHEN agent_did IS NOT NULL THEN agent_uri END AS agent_uri
      FROM prompts TABLESAMPLE SYSTEM (5)
      WHERE NOT deleted AND NOT hidden LIMIT 20000`
    const [{ visible }] = await sql<{ visible: number }[]>`
      SELECT count(*)::int AS visible FROM prompts WHERE NOT deleted AND NOT hidden`
    details.visiblePrompts = visible
    await checkpoint(o.serverUrl)
    const lookupPaths = keys.map((k) => `/v1/prompts/${k.did}/${k.rkey}`)
    const dids = [...new Set(keys.map((k) => k.did))]
    // Only agent at-uris the API's agent filter accepts: the generator's invalid prompts
    // carry malformed ones, which would measure 400s.
    const agents = [...new Set(keys.map((k) => k.agent_uri))].filter(
      (a): a is string => a !== null && isAgentFilter(a),
    )

    const sets: PathSets = {
      uniform: lookupPaths,
      zipf: zipfPaths(lookupPaths, 20_000),
      lists: [],
    }
    // Every server meets the lookup keys' rows (heap and TOAST) in the page cache.
    const keyDids = keys.map((k) => k.did)
    const keyRkeys = keys.map((k) => k.rkey)
    const prewarm = async () => {
      await sql`SELECT sum(length(p.record::text)) FROM unnest(${keyDids}::text[], ${keyRkeys}::text[])
        AS k(did, rkey) JOIN prompts p ON p.did = k.did AND p.rkey = k.rkey`
    }
    const env = { DATABASE_URL: db.url, HOST: '127.0.0.1' }
    const profile = process.env.BENCH_API_PROFILE
    // Same node flags as the product: the baselines differ only in what the route does.
    const flags = nodeFlagsFromEnv('BENCH_NODE_FLAGS')
    const { product, plain, bare } = await measureChildren(
      {
        product: {
          args: [CLI, 'serve'],
          // The API's per-client limit would refuse a load generator on one address.
          env: { ...env, LOG_LEVEL: 'warn', RATE_LIMIT_PER_MINUTE: '10000000' },
          execArgv: [...flags, ...(profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : [])],
          before: async (base) => {
            sets.lists = await listPaths(base, dids, agents)
            const sample = await fetch(base + lookupPaths[0])
            checks.push({
              name: 'a looked-up prompt comes back whole',
              ok:
                sample.status === 200 &&
                typeof ((await sample.json()) as { record?: unknown }).record === 'object',
              detail: `HTTP ${sample.status}`,
            })
            log(`${lookupPaths.length} lookup keys, ${sets.lists.length} list pages`)
          },
        },
        plain: { args: [libPath('plain-server.ts')], env, execArgv: flags },
        bare: { args: [libPath('bare-server.ts')], env, execArgv: flags },
      },
      sets,
      { ...o, prewarm },
      log,
    )
    details.product = { ...product.runs, rssMb: product.rssMb, delay: product.serverDelay }
    details.plain = { ...plain.runs, delay: plain.serverDelay }
    details.bare = { ...bare.runs, delay: bare.serverDelay }
    details.tail = { product: product.tail, plain: plain.tail, bare: bare.tail }
    details.rounds = { product: product.rounds, plain: plain.rounds, bare: bare.rounds }
    for (const [name, t] of Object.entries({ product, plain }))
      log(`${name} tail: ${JSON.stringify(t.tail)}`)
    for (const [server, p] of Object.entries({ product, plain, bare }))
      for (const [name, r] of Object.entries(p.runs))
        checks.push(...answerCheck(`${server} ${name}`, r))
    rows.push(...readRows(product.runs, plain.runs, bare.runs, o.rate))
  } finally {
    await sql.end()
    await db.drop()
  }
  return scenarioResult(run, o, {
    scenario: 'read-api',
    title: `Read API at ${o.prompts.toLocaleString('en-US')} prompts`,
    params: { ...o, log: undefined, reuseUrl: undefined, contentBytes: benchEnv.contentBytes },
    notes: [
      `autocannon in the benchmark process and the paced client in a process of its own (bench/lib/paced-child.ts), ${o.connections} connections, ${o.durationS} s per measurement in ${o.rounds} parts, the three servers taking turns (A B C, then C B A), each part after an uncounted second of the same load; the API (\`prompt-appview serve\`), Postgres and autocannon share the machine`,
      'lookups are visible prompts (full record in the answer), picked uniformly from a 5% sample or by Zipf rank (s = 1) over it; list pages mix every flag filter, did and agent filters, first pages and cursors up to 4 pages deep',
      "each server's lookups (and its paced runs) start right after one statement read every lookup key's record, so the servers measured one after another all meet those rows in the page cache, which this machine reclaims within about a minute",
      `"plain" is a Fastify + postgres.js server running one indexed SELECT per request with no features (bench/lib/plain-server.ts); "bare" answers a constant. "paced" sends one request every ${(1000 / o.rate).toFixed(1)} ms over ${o.connections} keep-alive connections and times each from when it was due`,
    ],
  })
}

if (isMain(import.meta.url)) await runAsMain(() => runReadApi(readApiOptionsFromEnv()))
