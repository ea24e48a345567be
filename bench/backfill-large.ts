import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Readable } from 'node:stream'
import { Secp256k1Keypair } from '@atproto/crypto'
import pino from 'pino'
import { runBackfill } from '../src/ingest/backfill/backfill.ts'
import { fetchRepoSnapshot } from '../src/ingest/backfill/repo-snapshot.ts'
import { Resyncer } from '../src/ingest/firehose/chain/resyncer.ts'
import { createMetrics } from '../src/observe/metrics.ts'
import { type BigRepo, buildBigRepo, fixedResolver } from '../test/helpers/firehose/big-repo.ts'
import { nodeFlagsFromEnv, spawnNode } from '../test/helpers/node-child.ts'
import { count } from './lib/env.ts'
import { type Check, row, type ScenarioResult } from './lib/report.ts'
import { isMain, machineInfo, runAsMain } from './lib/scenario.ts'
import { COLLECTIONS } from './lib/traffic.ts'

// Backfill of one large repo (BENCH_BACKFILL_MB, default 1024 MB of other collections'
// records, a handful of Letta prompts) against the same backfill of a small repo (the same
// Letta prompts, 200 other records): each in its own process with the product's Node flags
// (a 256 MB heap), its peak resident set read from getrusage. This process plays the PDS:
// it streams the CAR as it generates it (test/helpers/firehose/big-repo.ts), MST nodes last. The
// backfill hands the verified snapshot to a counting sink, not to a database: the measure
// is the streamed read, the hash checks, the sparse MST index and the signature.

const PROMPT = COLLECTIONS[0]
const LETTA_RECORDS = 5
const prompt = (i: number) => ({
  $type: PROMPT,
  content: `compiled prompt ${i} `.repeat(200),
  compiledAt: '2026-01-01T00:00:00.000Z',
})

interface ChildResult {
  maxRssMb: number
  records: number
  failed: number
  seconds: number
  bytes: number
}

/** One resync by the firehose's Resyncer (fetch, stream, verify), timed by its histogram. */
async function resyncMain(url: string, did: string, key: string): Promise<void> {
  const metrics = createMetrics({ version: 'bench', collections: COLLECTIONS })
  const resolver = fixedResolver(url, key)
  let records = -1
  const resyncer = new Resyncer({
    fetchSnapshot: (d, signal) =>
      fetchRepoSnapshot(d, {
        resolver,
        collections: COLLECTIONS,
        signal,
        allowPrivateNetwork: true,
        metrics,
      }),
    hostOf: async () => new URL(url).host,
    emit: async (ev) => {
      if (ev.kind === 'snapshot') records = ev.records.length
    },
    head: async () => null,
    settle: () => {},
    logger: pino({ level: 'warn' }),
    metrics,
    maxAttempts: 1,
  })
  resyncer.request(did)
  while (resyncer.isBusy(did)) await new Promise((r) => setTimeout(r, 20))
  const h = (await metrics.resyncDurationSeconds.get()).values.find((v) =>
    v.metricName?.endsWith('_sum'),
  )
  const res: ChildResult = {
    maxRssMb: process.resourceUsage().maxRSS / 1024,
    records,
    failed: records < 0 ? 1 : 0,
    seconds: h?.value ?? Number.NaN,
    bytes: 0,
  }
  console.log(`RESULT ${JSON.stringify(res)}`)
  await resyncer.close()
}

async function childMain(url: string, did: string, key: string): Promise<void> {
  const metrics = createMetrics({ version: 'bench', collections: COLLECTIONS })
  let records = 0
  const t = performance.now()
  const summary = await runBackfill({
    logger: pino({ level: 'warn' }),
    metrics,
    resolver: fixedResolver(url, key),
    collections: COLLECTIONS,
    dids: [did],
    concurrency: 1,
    isDone: () => false,
    markDone: () => {},
    emit: async (s) => {
      records += s.records.length
    },
    signal: new AbortController().signal,
    progress: false,
    allowPrivateNetwork: true,
    attempts: 1,
  })
  const res: ChildResult = {
    maxRssMb: process.resourceUsage().maxRSS / 1024,
    records,
    failed: summary.failed,
    seconds: (performance.now() - t) / 1000,
    bytes: 0,
  }
  console.log(`RESULT ${JSON.stringify(res)}`)
}

async function measure(
  url: string,
  did: string,
  key: string,
  mode = '--child',
): Promise<ChildResult> {
  const child = spawnNode(
    [new URL(import.meta.url).pathname, mode, url, did, key],
    {},
    {
      execArgv: nodeFlagsFromEnv('BENCH_NODE_FLAGS'),
    },
  )
  const code = await child.exited
  const line = child.output.find((l) => l.includes('RESULT '))
  if (code !== 0 || !line)
    throw new Error(`backfill child failed (${code}): ${child.output.slice(-10).join('\n')}`)
  return JSON.parse(line.slice(line.indexOf('RESULT ') + 7)) as ChildResult
}

export async function runBackfillLarge(): Promise<ScenarioResult> {
  const started = new Date()
  const mb = count('BENCH_BACKFILL_MB', 1024)
  const recordBytes = 50_000
  const keypair = await Secp256k1Keypair.create()
  const small = 'did:plc:benchsmallaaaaaaaaaaaaaa'
  const large = 'did:plc:benchlargeaaaaaaaaaaaaaa'
  const wanted = { collection: PROMPT, count: LETTA_RECORDS, record: prompt }
  const t0 = performance.now()
  const repos: Record<string, BigRepo> = {
    [small]: await buildBigRepo({
      did: small,
      keypair,
      otherRecords: 200,
      otherRecordBytes: 500,
      wanted,
    }),
    [large]: await buildBigRepo({
      did: large,
      keypair,
      otherRecords: Math.ceil((mb * 1024 * 1024) / recordBytes),
      otherRecordBytes: recordBytes,
      wanted,
    }),
  }
  console.log(`[backfill-large] repos built in ${((performance.now() - t0) / 1000).toFixed(0)} s`)
  const server = createServer((req, res) => {
    const did = new URL(req.url ?? '/', 'http://x').searchParams.get('did') ?? ''
    const repo = repos[did]
    if (!repo) {
      res.writeHead(404).end()
      return
    }
    res.writeHead(200, { 'content-type': 'application/vnd.ipld.car' })
    Readable.from(repo.car()).pipe(res)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  try {
    const s = await measure(url, small, keypair.did())
    const l = await measure(url, large, keypair.did())
    const rs = await measure(url, small, keypair.did(), '--resync')
    const checks: Check[] = [
      { name: 'small repo: every Letta record', ok: s.records === LETTA_RECORDS && s.failed === 0 },
      { name: 'large repo: every Letta record', ok: l.records === LETTA_RECORDS && l.failed === 0 },
      { name: 'resync of the small repo: every Letta record', ok: rs.records === LETTA_RECORDS },
    ]
    const largeMb = repos[large].bytes / 1024 / 1024
    return {
      scenario: 'backfill-large',
      title: 'Backfill of a large repo',
      startedAt: started.toISOString(),
      durationS: (Date.now() - started.getTime()) / 1000,
      machine: await machineInfo(null),
      params: { largeRepoMb: Math.round(largeMb), recordBytes, lettaRecords: LETTA_RECORDS },
      rows: [
        row(
          `peak RSS, ${Math.round(largeMb)} MB repo`,
          l.maxRssMb,
          'MB',
          'within 1.5x the small repo',
          l.maxRssMb <= 1.5 * s.maxRssMb,
          s.maxRssMb,
        ),
        row(`backfill time, ${Math.round(largeMb)} MB repo`, l.seconds, 's', 'informational', null),
        row('throughput, large repo', largeMb / l.seconds, 'MB/s', 'informational', null),
        row(
          'resync of the small repo (getRepo, stream, verify)',
          rs.seconds * 1000,
          'ms',
          'informational',
          null,
        ),
      ],
      checks,
      details: { small: s, large: l, resync: rs, loadavg: (await import('node:os')).loadavg() },
      notes: [
        `baseline: the same backfill of a ${Math.round(repos[small].bytes / 1024)} kB repo with the same ${LETTA_RECORDS} Letta records`,
      ],
    }
  } finally {
    server.closeAllConnections()
    server.close()
  }
}

if (isMain(import.meta.url)) {
  const i = process.argv.indexOf('--child')
  const j = process.argv.indexOf('--resync')
  if (i >= 0) await childMain(process.argv[i + 1], process.argv[i + 2], process.argv[i + 3])
  else if (j >= 0) await resyncMain(process.argv[j + 1], process.argv[j + 2], process.argv[j + 3])
  else await runAsMain(runBackfillLarge)
}
