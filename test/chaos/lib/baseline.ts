import { join } from 'node:path'
import { type CliProc, startCli } from './cli-proc.ts'
import type { ChaosContext } from './context.ts'
import { type DbTarget, type Driver, freshDb } from './db.ts'
import { type Digest, readDigest } from './digest.ts'
import { type EventSet, makeEvents, writeLines } from './events.ts'
import { waitCaughtUp } from './progress.ts'

// The uninterrupted runs every fault run is compared with: the same events replayed
// once with one event per batch (the finest change feed there is) and once with the
// default batching (whose time to catch up sizes the windows faults are injected in).

/** Settings for every product process of the suite: no network, no rate limit in the way. */
export const COMMON_ENV: Record<string, string> = {
  PLC_URL: 'http://127.0.0.1:1',
  RATE_LIMIT_PER_MINUTE: '10000000',
  LOG_LEVEL: 'info',
}

export interface Baseline {
  driver: Driver
  set: EventSet
  file: string
  /** One event per batch. */
  fine: Digest
  /** Default batching. */
  normal: Digest
  /** Spawn to caught up, default batching. */
  normalMs: number
  fineMs: number
}

export interface Shared {
  seed: number
  short: boolean
  events(): EventSet
  baseline(driver: Driver): Promise<Baseline>
}

export function replayArgs(file: string): string[] {
  return ['run', '--source', 'replay', '--replay-file', file]
}

/** Runs a replay of `file` to its end on `db`; returns the digest and the time it took. */
export async function uninterrupted(
  file: string,
  last: number,
  db: DbTarget,
  env: Record<string, string> = {},
): Promise<{ digest: Digest; ms: number; proc: CliProc }> {
  const t0 = performance.now()
  const p = startCli(replayArgs(file), { ...COMMON_ENV, ...db.env, ...env })
  try {
    await p.waitListening()
    await waitCaughtUp(p, last, 600_000)
    const ms = performance.now() - t0
    return { digest: await readDigest(p.url()!), ms, proc: p }
  } catch (err) {
    p.kill9()
    throw err
  }
}

/**
 * The short run's event count: enough for two cuts of a ~600-frame plan, a few kill points
 * and outages; every scenario of the short run replays it (most of its time is these events).
 */
export const SHORT_EVENTS = 1_500

/** Where the one-event-per-batch run goes (the feed does not depend on the driver). */
const FINE_DRIVER: Driver = process.env.CHAOS_FINE_DRIVER === 'pglite' ? 'pglite' : 'postgres'

export function createShared(seed: number, short: boolean, ctx: ChaosContext): Shared {
  let set: EventSet | null = null
  let eventsFile: string | null = null
  let fine: Promise<{ digest: Digest; ms: number }> | null = null
  const baselines = new Map<Driver, Promise<Baseline>>()
  const events = () => {
    set ??= makeEvents(seed, short ? SHORT_EVENTS : 12_000)
    return set
  }
  const file = () => {
    if (!eventsFile) {
      eventsFile = join(ctx.tempDir('events'), 'events.ndjson')
      writeLines(eventsFile, events().lines)
    }
    return eventsFile
  }
  const runFine = async () => {
    const r = await uninterrupted(file(), events().lastTimeUs, await freshDb(ctx, FINE_DRIVER), {
      BATCH_SIZE: '1',
    })
    await r.proc.stop()
    console.log(
      `   one event per batch (${FINE_DRIVER}): ${events().events.length} events in ${(r.ms / 1000).toFixed(1)} s, ${r.digest.records.size} records, ${r.digest.feed.length} feed rows, digest ${r.digest.hash}`,
    )
    return { digest: r.digest, ms: r.ms }
  }
  const build = async (driver: Driver): Promise<Baseline> => {
    // The two runs share nothing but the events file, so the first baseline runs them side
    // by side; its default run's time, which sizes the kill windows, is the longer for it.
    fine ??= runFine()
    const [f, normal] = await Promise.all([
      fine,
      freshDb(ctx, driver).then((db) => uninterrupted(file(), events().lastTimeUs, db)),
    ])
    await normal.proc.stop()
    console.log(
      `   uninterrupted ${driver}: ${(normal.ms / 1000).toFixed(1)} s spawn to caught up, digest ${normal.digest.hash}`,
    )
    const s = events()
    return {
      driver,
      set: s,
      file: file(),
      fine: f.digest,
      normal: normal.digest,
      normalMs: normal.ms,
      fineMs: f.ms,
    }
  }
  return {
    seed,
    short,
    events,
    baseline: (driver) => {
      let b = baselines.get(driver)
      if (!b) {
        b = build(driver)
        baselines.set(driver, b)
      }
      return b
    },
  }
}
