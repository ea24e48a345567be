import { availableParallelism, loadavg } from 'node:os'

// Every knob of the benchmarks, read from the environment once. BENCH_SCALE multiplies every
// event, frame and row count (0.01 for a quick look, 2 for a longer run); an explicit
// per-scenario variable wins over the scale.

const scale = Number(process.env.BENCH_SCALE ?? '1')
if (!(scale > 0)) throw new Error('BENCH_SCALE must be a positive number')

function num(name: string, def: number, min = Number.MIN_VALUE): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return def
  const n = Number(raw)
  if (!Number.isFinite(n) || n < min)
    throw new Error(`${name} must be a ${min > 0 ? 'positive' : 'non-negative'} number`)
  return n
}

/** A count: the default is multiplied by BENCH_SCALE, an explicit value is taken as is. */
export function count(name: string, def: number, min = 1): number {
  const raw = process.env[name]
  if (raw !== undefined && raw !== '') return Math.max(min, Math.round(num(name, def, min)))
  return Math.max(min, Math.round(def * scale))
}

export const setting = num

export const benchEnv = {
  /** A Postgres server to create throwaway databases on (dropped afterwards). */
  serverUrl: process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
  scale,
  /** Bytes of a prompt's `content`; records are about twice that (content + coreMemory). */
  contentBytes: {
    min: Math.round(num('BENCH_CONTENT_MIN', 2048)),
    max: Math.round(num('BENCH_CONTENT_MAX', 12288)),
  },
  seed: Math.round(num('BENCH_SEED', 7)),
}

export function machine(): { nproc: number; node: string; platform: string; loadavg: number[] } {
  // The load average when the scenario ended: another workload on the box shows up here.
  const load = loadavg().map((x) => Math.round(x * 100) / 100)
  return {
    nproc: availableParallelism(),
    node: process.version,
    platform: process.platform,
    loadavg: load,
  }
}

/** The options every Postgres-backed scenario takes: where to create databases, a logger. */
export interface BenchOptions {
  serverUrl: string
  log?: (msg: string) => void
}

/** The shared part of a scenario's options from the environment; `name` tags its log lines. */
export function benchOptionsFromEnv(name: string): Required<BenchOptions> {
  return { serverUrl: benchEnv.serverUrl, log: (m) => console.log(`[${name}] ${m}`) }
}
