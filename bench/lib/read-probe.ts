import { writeFileSync } from 'node:fs'
import { monitorEventLoopDelay, PerformanceObserver, performance } from 'node:perf_hooks'

// Preloaded (`node --import`) into a process of the read benchmark when BENCH_PROBE_FILE is
// set: records each GC pause and each stall of the event loop (a 5 ms timer firing late)
// with its wall-clock time, and writes them to that file at exit, so the benchmark can say
// which slow requests fell on a pause of the server. Also run in the paced client's process
// (paced-child.ts) through `startProbe`: its stalls delay requests just as much.

/** [epoch ms at start, duration ms, kind]: V8's gc kinds, 1 minor, 2 major, 4 incremental. */
export type GcEvent = [number, number, number]
/** [epoch ms the timer was due, ms late]. */
export type Stall = [number, number]

export interface ProbeData {
  gcs: GcEvent[]
  stalls: Stall[]
  /** Event-loop delay over the whole process life, ms (monitorEventLoopDelay). */
  delay: { p50: number; p99: number; max: number }
}

const TICK_MS = 5

export function startProbe(): () => ProbeData {
  const gcs: GcEvent[] = []
  const stalls: Stall[] = []
  const origin = performance.timeOrigin
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as { detail?: { kind?: number } }).detail?.kind ?? 0
      gcs.push([origin + e.startTime, e.duration, kind])
    }
  })
  observer.observe({ entryTypes: ['gc'] })
  const histogram = monitorEventLoopDelay({ resolution: 10 })
  histogram.enable()
  let last = performance.now()
  const timer = setInterval(() => {
    const now = performance.now()
    const late = now - last - TICK_MS
    if (late > 2) stalls.push([origin + last + TICK_MS, late])
    last = now
  }, TICK_MS)
  timer.unref()
  return () => {
    clearInterval(timer)
    observer.disconnect()
    histogram.disable()
    const ms = (ns: number) => ns / 1e6
    return {
      gcs,
      stalls,
      delay: {
        p50: ms(histogram.percentile(50)),
        p99: ms(histogram.percentile(99)),
        max: ms(histogram.max),
      },
    }
  }
}

const file = process.env.BENCH_PROBE_FILE
if (file) {
  const stop = startProbe()
  process.on('exit', () => writeFileSync(file, JSON.stringify(stop())))
}
