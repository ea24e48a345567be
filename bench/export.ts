import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { DuckDBInstance } from '@duckdb/node-api'
import { CLI, nodeFlagsFromEnv, spawnNode } from '../test/helpers/node-child.ts'
import { createTempDatabase } from '../test/helpers/pg-cluster.ts'
import { loadReadDataset } from './lib/api-data.ts'
import { type BenchOptions, benchEnv, benchOptionsFromEnv, count, setting } from './lib/env.ts'
import { openBenchRuntime } from './lib/ingest-kit.ts'
import { checkpoint, rawClient } from './lib/pg.ts'
import { sampleTree } from './lib/proc-tree.ts'
import { row, type ScenarioResult } from './lib/report.ts'
import { isMain, runAsMain } from './lib/scenario.ts'
import { scenarioResult, startScenario } from './lib/scenario-run.ts'
import { sleep } from './lib/stats.ts'

// The snapshot export at scale (SPEC 13): `prompt-appview export` (its own process, the
// shipped node flags) over a Postgres of `prompts` prompts, as Parquet and as NDJSON, with
// the whole process tree's peak RSS; the same job done plainly (postgres.js cursor, one
// JSON line per prompt, no features) in the same run is the baseline. Then the Parquet
// writer choice: the same prompt rows written by hyparquet-writer and by DuckDB's own
// writer, each in a process of its own (bench/lib/parquet-writer-child.ts).

export interface ExportBenchOptions extends BenchOptions {
  prompts: number
  seedPrompts: number
  /** Rows each Parquet library writes in the writer comparison. */
  writerRows: number
  reuseUrl?: string
}

export function exportOptionsFromEnv(): ExportBenchOptions {
  return {
    ...benchOptionsFromEnv('export'),
    prompts: count('BENCH_EXPORT_PROMPTS', 500_000),
    seedPrompts: count('BENCH_EXPORT_SEED_PROMPTS', 10_000),
    writerRows: Math.round(setting('BENCH_EXPORT_WRITER_ROWS', 100_000)),
    reuseUrl: process.env.BENCH_EXPORT_DATABASE_URL || undefined,
  }
}

const HEAP_TARGET_MB = 256

interface Timed {
  seconds: number
  peakMb: number
  output: string
}

/** Runs a node child to its end, sampling its tree's memory every 100 ms. */
async function timedChild(args: string[], env: Record<string, string>, execArgv: string[]) {
  const t0 = performance.now()
  const child = spawnNode(args, env, { execArgv })
  let peakMb = 0
  let done = false
  void child.exited.then(() => {
    done = true
  })
  while (!done) {
    peakMb = Math.max(peakMb, sampleTree(child.pid).hwmMb)
    await sleep(100)
  }
  const code = await child.exited
  const output = child.output.join('')
  if (code !== 0) throw new Error(`${args.join(' ')} exited ${code}:\n${output}`)
  return { seconds: (performance.now() - t0) / 1000, peakMb, output } satisfies Timed
}

const PLAIN_CHILD = fileURLToPath(new URL('./lib/plain-export-child.ts', import.meta.url))
const WRITER_CHILD = fileURLToPath(new URL('./lib/parquet-writer-child.ts', import.meta.url))

async function duckCount(path: string): Promise<number> {
  const duck = await DuckDBInstance.create(':memory:')
  const conn = await duck.connect()
  try {
    const r = await conn.runAndReadAll(`SELECT count(*)::INTEGER AS n FROM read_parquet('${path}')`)
    return Number((r.getRowObjectsJS()[0] as { n: number }).n)
  } finally {
    conn.closeSync()
    duck.closeSync()
  }
}

export async function runExportBench(o: ExportBenchOptions): Promise<ScenarioResult> {
  const log = o.log ?? (() => {})
  const run = startScenario()
  const { rows, checks, details } = run
  const db = o.reuseUrl
    ? { url: o.reuseUrl, drop: async () => {} }
    : await createTempDatabase(o.serverUrl, 'bench_export')
  const sql = rawClient(db.url)
  const out = await mkdtemp(join(tmpdir(), 'bench-export-'))
  try {
    if (!o.reuseUrl) {
      const rt = await openBenchRuntime({ kind: 'postgres', url: db.url })
      try {
        details.load = await loadReadDataset(rt, db.url, o.prompts, o.seedPrompts, log)
      } finally {
        await rt.close()
      }
    }
    const [{ visible, bytes }] = await sql<{ visible: number; bytes: string }[]>`
      SELECT count(*)::int AS visible, sum(length(record::text))::bigint AS bytes
      FROM prompts WHERE NOT deleted AND NOT hidden`
    details.visiblePrompts = visible
    details.promptRecordMb = Number(bytes) / 1e6
    await checkpoint(o.serverUrl)
    const env = { DATABASE_URL: db.url, LOG_LEVEL: 'warn' }
    const flags = nodeFlagsFromEnv('BENCH_EXPORT_NODE_FLAGS')
    const runs: Record<string, Timed & { fileMb: number }> = {}
    for (const format of ['parquet', 'ndjson'] as const) {
      const dir = join(out, format)
      log(`product export as ${format}`)
      const t = await timedChild([CLI, 'export', '--out', dir, '--format', format], env, flags)
      const fileMb = (await stat(join(dir, `prompts.${format}`))).size / 1e6
      runs[format] = { ...t, fileMb }
      log(
        `${format}: ${t.seconds.toFixed(1)} s, peak ${t.peakMb.toFixed(0)} MB, ${fileMb.toFixed(0)} MB`,
      )
    }
    log('plain export (postgres.js cursor, NDJSON)')
    const plain = await timedChild([PLAIN_CHILD, db.url, join(out, 'plain.ndjson')], {}, [])
    runs.plain = { ...plain, fileMb: (await stat(join(out, 'plain.ndjson'))).size / 1e6 }
    const read = await duckCount(join(out, 'parquet', 'prompts.parquet'))
    checks.push({
      name: 'DuckDB reads every visible prompt from the Parquet export',
      ok: read === visible,
      detail: `${read} of ${visible}`,
    })
    rows.push(
      row('export Parquet: time', runs.parquet.seconds, 's', 'informational', null, plain.seconds),
      row('export NDJSON: time', runs.ndjson.seconds, 's', 'informational', null, plain.seconds),
      row(
        'export Parquet: peak RSS (tree)',
        runs.parquet.peakMb,
        'MB',
        `within the shipped heap (${HEAP_TARGET_MB} MB) plus the runtime`,
        runs.parquet.peakMb <= HEAP_TARGET_MB + 150,
        plain.peakMb,
      ),
      row(
        'export NDJSON: peak RSS (tree)',
        runs.ndjson.peakMb,
        'MB',
        'informational',
        null,
        plain.peakMb,
      ),
    )
    details.runs = Object.fromEntries(
      Object.entries(runs).map(([k, v]) => [k, { ...v, output: undefined }]),
    )
    details.writers = await compareWriters(join(out, 'ndjson', 'prompts.ndjson'), out, o, log)
  } finally {
    await sql.end()
    await db.drop()
    await rm(out, { recursive: true, force: true })
  }
  return scenarioResult(run, o, {
    scenario: 'export',
    title: `Snapshot export of ${o.prompts.toLocaleString('en-US')} prompts`,
    params: { ...o, log: undefined, reuseUrl: undefined, contentBytes: benchEnv.contentBytes },
    notes: [
      '`prompt-appview export` with the shipped node flags against Postgres on the same machine; peak RSS is the sum of VmHWM over the process tree, sampled every 100 ms',
      '"plain" reads the same visible prompts with a postgres.js cursor (1,000 rows) and writes one JSON.stringify line each, no features (bench/lib/plain-export-child.ts)',
    ],
  })
}

/** hyparquet-writer against DuckDB's writer on the same rows, each in its own process. */
async function compareWriters(
  ndjson: string,
  out: string,
  o: ExportBenchOptions,
  log: (m: string) => void,
) {
  const results: Record<string, unknown> = {}
  for (const lib of ['hyparquet-writer', 'duckdb'] as const) {
    const file = join(out, `writer-${lib}.parquet`)
    const t = await timedChild(
      [WRITER_CHILD, lib, ndjson, file, String(o.writerRows)],
      {},
      nodeFlagsFromEnv('BENCH_EXPORT_NODE_FLAGS'),
    )
    const size = (await stat(file)).size / 1e6
    results[lib] = {
      seconds: t.seconds,
      peakMb: t.peakMb,
      fileMb: size,
      report: t.output.trim(),
    }
    log(
      `${lib}: ${t.output.trim()} (${t.seconds.toFixed(1)} s with start-up, peak ${t.peakMb.toFixed(0)} MB, ${size.toFixed(0)} MB)`,
    )
  }
  return results
}

if (isMain(import.meta.url)) await runAsMain(() => runExportBench(exportOptionsFromEnv()))
