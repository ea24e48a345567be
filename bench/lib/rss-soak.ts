import type { NodeChild } from '../../test/helpers/node-child.ts'
import { sleep } from './stats.ts'

// RSS of a long-running product process, sampled from /proc while it runs for a set time,
// and its growth after warm-up: the figure SPEC section 11's "flat memory" is judged by.

export interface RssSample {
  atS: number
  rssMb: number
  heapUsedMb: number | null
}

export interface SoakFigures {
  samples: RssSample[]
  /** Highest RSS in the window right after warm-up, and in the last window of the run. */
  afterWarmupMb: number
  endMb: number
  growthPct: number
  peakMb: number
  peakHeapUsedMb: number | null
}

/** prom-client's heap gauge from the process's /metrics, or null when it does not answer. */
async function heapUsedMb(metricsUrl: string | null): Promise<number | null> {
  if (!metricsUrl) return null
  try {
    const text = await (await fetch(metricsUrl, { signal: AbortSignal.timeout(10_000) })).text()
    const m = /^prompt_appview_nodejs_heap_size_used_bytes(?:\{[^}]*\})? ([0-9.e+]+)/m.exec(text)
    return m ? Number(m[1]) / 2 ** 20 : null
  } catch {
    return null
  }
}

/**
 * Samples every `everyS` for `durationS`. RSS saw-tooths with garbage collection, so the
 * growth compares peaks with peaks: the highest sample of the window (`windowS`) that starts
 * when warm-up ends, against the highest of the last window.
 */
export async function soak(
  child: NodeChild,
  o: {
    durationS: number
    warmupS: number
    windowS: number
    everyS: number
    metricsUrl: string | null
    log: (m: string) => void
    label: string
  },
): Promise<SoakFigures> {
  const samples: RssSample[] = []
  const t0 = performance.now()
  let nextLog = 60
  for (;;) {
    const atS = (performance.now() - t0) / 1000
    if (atS > o.durationS) break
    if (child.proc.exitCode !== null || child.proc.signalCode !== null) {
      throw new Error(
        `${o.label} exited after ${atS.toFixed(0)} s (${child.proc.exitCode ?? child.proc.signalCode}):\n${child.output.join('')}`,
      )
    }
    samples.push({ atS, rssMb: child.rssMb(), heapUsedMb: await heapUsedMb(o.metricsUrl) })
    if (atS >= nextLog) {
      nextLog += 60
      const s = samples.at(-1)!
      o.log(
        `${o.label} ${atS.toFixed(0)} s: RSS ${s.rssMb.toFixed(0)} MB, heap ${s.heapUsedMb?.toFixed(0) ?? '?'} MB`,
      )
    }
    await sleep(o.everyS * 1000)
  }
  return figures(samples, o)
}

export function figures(
  samples: RssSample[],
  o: { durationS: number; warmupS: number; windowS: number },
): SoakFigures {
  const maxIn = (from: number, to: number) => {
    const pool = samples.filter((s) => s.atS >= from && s.atS <= to).map((s) => s.rssMb)
    return pool.length ? Math.max(...pool) : Number.NaN
  }
  const end = samples.at(-1)?.atS ?? o.durationS
  const afterWarmupMb = maxIn(o.warmupS, o.warmupS + o.windowS)
  const endMb = maxIn(end - o.windowS, end)
  const heaps = samples.map((s) => s.heapUsedMb).filter((h): h is number => h !== null)
  return {
    samples,
    afterWarmupMb,
    endMb,
    growthPct: ((endMb - afterWarmupMb) / afterWarmupMb) * 100,
    peakMb: Math.max(...samples.map((s) => s.rssMb)),
    peakHeapUsedMb: heaps.length ? Math.max(...heaps) : null,
  }
}
