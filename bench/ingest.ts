import { sql } from 'drizzle-orm'
import { createTempDatabase } from '../test/helpers/pg-cluster.ts'
import { cpuSince, cpuSnapshot } from './lib/cpu.ts'
import { benchEnv, count } from './lib/env.ts'
import { startFeeder } from './lib/feeder.ts'
import {
  type Backend,
  commitOutcomes,
  openBenchRuntime,
  runBaseline,
  runBulk,
  runProduct,
  tempDataDir,
} from './lib/ingest-kit.ts'
import { checkpoint } from './lib/pg.ts'
import { row, type ScenarioResult } from './lib/report.ts'
import { isMain, runAsMain } from './lib/scenario.ts'
import { scenarioResult, startScenario } from './lib/scenario-run.ts'
import type { TrafficTally } from './lib/traffic.ts'

// Jetstream ingest, durable: a local Jetstream (its own process, loaded beforehand) replays
// generated traffic; the product indexes it into Postgres (and PGlite on disk), and the
// naive writer (one autocommitted INSERT ... ON CONFLICT per event) indexes the first part
// of the same traffic through the same source code, in the same run.

export interface IngestOptions {
  /** Postgres server for throwaway databases; null runs PGlite only. */
  serverUrl: string | null
  events: number
  baselineEvents: number
  pgliteEvents: number
  pgliteBaselineEvents: number
  dids: number
  /** Skip PGlite (it is slow; the smoke test keeps it). */
  pglite: boolean
}

export function ingestOptionsFromEnv(): IngestOptions {
  return {
    serverUrl: benchEnv.serverUrl,
    events: count('BENCH_INGEST_EVENTS', 100_000),
    baselineEvents: count('BENCH_INGEST_BASELINE_EVENTS', 12_000),
    pgliteEvents: count('BENCH_INGEST_PGLITE_EVENTS', 20_000),
    pgliteBaselineEvents: count('BENCH_INGEST_PGLITE_BASELINE_EVENTS', 4_000),
    dids: count('BENCH_INGEST_DIDS', 1000),
    pglite: process.env.BENCH_INGEST_PGLITE !== '0',
  }
}

interface Measured {
  eventsPerS: number
  mbPerS: number
  elapsedS: number
  matching: number
  cpu: ReturnType<typeof cpuSince>
}

/** Two runs of the same work as one: their mean rates, the rest of the first. */
const meanOf = (a: Measured, b: Measured): Measured => ({
  ...a,
  eventsPerS: (a.eventsPerS + b.eventsPerS) / 2,
  mbPerS: (a.mbPerS + b.mbPerS) / 2,
})

const measured = (t: TrafficTally, elapsedS: number, cpu: Measured['cpu']): Measured => ({
  eventsPerS: t.matching / elapsedS,
  mbPerS: t.recordBytes / 1e6 / elapsedS,
  elapsedS,
  matching: t.matching,
  cpu,
})

async function withBackend<T>(
  kind: 'postgres' | 'pglite',
  serverUrl: string | null,
  label: string,
  fn: (b: Backend) => Promise<T>,
): Promise<T> {
  if (kind === 'postgres') {
    const db = await createTempDatabase(serverUrl!, `bench_${label}`)
    try {
      await checkpoint(serverUrl!)
      return await fn({ kind: 'postgres', url: db.url })
    } finally {
      await db.drop()
    }
  }
  const dir = tempDataDir(label)
  try {
    return await fn({ kind: 'pglite', dataDir: dir.dataDir })
  } finally {
    dir.cleanup()
  }
}

/** The product over Jetstream v2 (its own feeder: same generator, same first `n` events). */
async function runV2(kind: 'postgres' | 'pglite', o: IngestOptions, n: number) {
  const feeder = await startFeeder({ events: n, dids: o.dids, cuts: [n], wire: 'v2' })
  try {
    return await withBackend(kind, o.serverUrl, `ingest_v2_${kind}`, async (b) => {
      const rt = await openBenchRuntime(b)
      try {
        const cpu = cpuSnapshot()
        const last = feeder.cuts[0].lastUs
        const run = await runProduct(rt, feeder.url, feeder.total.firstUs, last, 'v2')
        const m = measured(feeder.cuts[0], run.elapsedS, cpuSince(cpu))
        const outcomes = await commitOutcomes(rt)
        const { values } = await rt.ctx.metrics.jetstreamBytesTotal.get()
        const stage = (s: string) => values.find((v) => v.labels.stage === s)?.value ?? 0
        return {
          ...m,
          processed: Object.values(outcomes).reduce((a, c) => a + c, 0),
          errors: outcomes.error ?? 0,
          wireBytes: stage('wire'),
          decodedBytes: stage('decoded'),
        }
      } finally {
        await rt.close()
      }
    })
  } finally {
    await feeder.close()
  }
}

export async function runIngest(o: IngestOptions): Promise<ScenarioResult> {
  const run = startScenario()
  const total = Math.max(o.serverUrl ? o.events : 0, o.pglite ? o.pgliteEvents : 0)
  const cutsWanted = [o.events, o.baselineEvents, o.pgliteEvents, o.pgliteBaselineEvents]
  const feeder = await startFeeder({ events: total, dids: o.dids, cuts: cutsWanted })
  const cut = (n: number) => feeder.cuts[[...cutsWanted].sort((a, b) => a - b).indexOf(n)]
  run.details.traffic = feeder.total
  const { rows, checks, details } = run
  try {
    const backends = [
      ...(o.serverUrl ? (['postgres'] as const) : []),
      ...(o.pglite ? (['pglite'] as const) : []),
    ]
    for (const kind of backends) {
      const n = kind === 'postgres' ? o.events : o.pgliteEvents
      const nb = kind === 'postgres' ? o.baselineEvents : o.pgliteBaselineEvents
      // The naive writer before and after the product, averaged: its rate (one fsync an event)
      // drifts between runs minutes apart (bench/README.md, "Search words").
      const runNaive = (when: 'before' | 'after') =>
        withBackend(kind, o.serverUrl, `naive_${when}_${kind}`, async (b) => {
          const rt = await openBenchRuntime(b)
          try {
            const cpu = cpuSnapshot()
            const run = await runBaseline(rt, feeder.url, feeder.total.firstUs, cut(nb).lastUs)
            checks.push({
              name: `${kind}: the baseline wrote its events (${when} the product)`,
              ok: run.events >= cut(nb).matching,
              detail: `${run.events} writes for ${cut(nb).matching} matching events`,
            })
            return measured(cut(nb), run.elapsedS, cpuSince(cpu))
          } finally {
            await rt.close()
          }
        })
      const naiveBefore = await runNaive('before')
      const product = await withBackend(kind, o.serverUrl, `ingest_${kind}`, async (b) => {
        const rt = await openBenchRuntime(b)
        try {
          const cpu = cpuSnapshot()
          const run = await runProduct(rt, feeder.url, feeder.total.firstUs, cut(n).lastUs)
          const m = measured(cut(n), run.elapsedS, cpuSince(cpu))
          const outcomes = await commitOutcomes(rt)
          const processed = Object.values(outcomes).reduce((a, b) => a + b, 0)
          const [counts] = await rt.ctx.db.rows<Record<string, number>>(sql`SELECT
            (SELECT count(*)::int FROM prompts WHERE NOT deleted) AS prompts,
            (SELECT count(*)::int FROM conversations WHERE NOT deleted) AS conversations,
            (SELECT count(*)::int FROM agents WHERE NOT deleted) AS agents,
            (SELECT count(*)::int FROM changes) AS changes`)
          checks.push({
            name: `${kind}: every matching event reached the indexer`,
            ok: processed >= m.matching && (outcomes.error ?? 0) === 0,
            detail: `${processed} processed (${JSON.stringify(outcomes)}) of ${m.matching} sent`,
          })
          checks.push({
            name: `${kind}: records are stored`,
            ok: counts.prompts > 0 && counts.conversations > 0 && counts.changes > 0,
            detail: JSON.stringify(counts),
          })
          return { ...m, outcomes, counts }
        } finally {
          await rt.close()
        }
      })
      const naiveAfter = await runNaive('after')
      const baseline = meanOf(naiveBefore, naiveAfter)
      // Informational: the same traffic written in bulk with nothing else (Postgres only).
      const bulk =
        kind === 'postgres'
          ? await withBackend(kind, o.serverUrl, `bulk_${kind}`, async (b) => {
              const rt = await openBenchRuntime(b)
              try {
                const cpu = cpuSnapshot()
                const run = await runBulk(rt, feeder.url, feeder.total.firstUs, cut(n).lastUs)
                return measured(cut(n), run.elapsedS, cpuSince(cpu))
              } finally {
                await rt.close()
              }
            })
          : null
      // The same first n events on the v2 wire (subscribeEvents, dictionary zstd), once.
      const v2 = kind === backends[0] ? await runV2(kind, o, n) : null
      details[kind] = { product, baseline, naiveBefore, naiveAfter, bulk, v2 }
      const label = kind === 'postgres' ? 'Postgres' : 'PGlite'
      const ratio = product.eventsPerS / baseline.eventsPerS
      rows.push(
        row(
          `${label}: matching events/s`,
          product.eventsPerS,
          'ev/s',
          kind === 'postgres' ? '>= 5x the naive writer' : '(none)',
          kind === 'postgres' ? ratio >= 5 : null,
          baseline.eventsPerS,
        ),
        row(`${label}: records`, product.mbPerS, 'MB/s', '(none)', null, baseline.mbPerS),
      )
      if (bulk) {
        rows.push(
          row(
            `${label}: matching events/s against the bulk upsert reference`,
            product.eventsPerS,
            'ev/s',
            '>= 1.5x the bulk upsert reference',
            product.eventsPerS >= 1.5 * bulk.eventsPerS,
            bulk.eventsPerS,
          ),
        )
      }
      if (v2) {
        rows.push(
          row(
            `${label}: v2 matching events/s`,
            v2.eventsPerS,
            'ev/s',
            'reference: v1 on the same traffic',
            null,
            product.eventsPerS,
          ),
          row(
            `${label}: v2 zstd bytes on the wire`,
            v2.wireBytes / 1e6,
            'MB',
            `of ${(v2.decodedBytes / 1e6).toFixed(1)} MB decoded`,
            null,
            v2.decodedBytes / 1e6,
          ),
        )
        checks.push({
          name: `${kind}: v2 delivered every matching event`,
          ok: v2.processed >= v2.matching && v2.errors === 0,
          detail: `${v2.processed} processed of ${v2.matching} sent, ${v2.errors} errors`,
        })
      }
    }
  } finally {
    await feeder.close()
  }
  const matchingBytes = feeder.total.matching ? feeder.total.recordBytes / feeder.total.matching : 0
  return scenarioResult(run, o, {
    scenario: 'ingest',
    title: 'Jetstream ingest (durable)',
    params: { ...o, log: undefined, contentBytes: benchEnv.contentBytes, seed: benchEnv.seed },
    notes: [
      `${Math.round(matchingBytes)} B of record per matching event on average (prompts ${benchEnv.contentBytes.min}-${benchEnv.contentBytes.max} B of content, about twice that as a record)`,
      'the naive baseline writes only the record row (no flags, history, change log or cursor), so it does less work per event than the product',
      'the naive baseline runs right before and right after the product; its rate is the mean of the two (details: naiveBefore, naiveAfter)',
      'bulk upsert reference: the same events through the same source, 1,000 per transaction, one INSERT ... ON CONFLICT per table from a jsonb batch and nothing else: roughly the most these bytes can go into these tables on this machine with this write path',
    ],
  })
}

if (isMain(import.meta.url)) await runAsMain(() => runIngest(ingestOptionsFromEnv()))
