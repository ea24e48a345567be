import type { GcEvent, ProbeData, Stall } from './read-probe.ts'

// Where the slow requests of a paced run fall: by second of the run (a warm-up or a cache
// expiry shows as a cluster), and on what pause of the server or of the load generator
// their time overlapped (GC pauses, event-loop stalls). Wall-clock times on both sides
// (performance.timeOrigin + now), so one process's pauses line up with the other's requests.

export interface TailReport {
  requests: number
  /** Requests slower than `slowMs`. */
  slow: number
  slowMs: number
  /** Slow requests per second of the run (index = second). */
  slowBySecond: number[]
  /** Slow requests whose time overlapped a GC pause of the server, by kind. */
  onServerMinorGc: number
  onServerMajorGc: number
  /** ... a server event-loop stall of 10 ms or more. */
  onServerStall: number
  /** ... a stall of the load generator's loop of 10 ms or more. */
  onClientStall: number
  server: PauseTotals
  client: PauseTotals
}

interface PauseTotals {
  minorGcs: number
  minorGcMs: number
  majorGcs: number
  majorGcMs: number
  maxGcMs: number
  stalls10: number
  stallMs: number
  maxStallMs: number
}

const MAJOR = 2

const within = <T extends [number, number, ...number[]]>(xs: T[], from: number, to: number) =>
  xs.filter(([at, ms]) => at < to && at + ms > from)

function totals(p: ProbeData | null, from: number, to: number): PauseTotals {
  const gcs = p ? within<GcEvent>(p.gcs, from, to) : []
  const stalls = p ? within<Stall>(p.stalls, from, to) : []
  const minor = gcs.filter((g) => g[2] !== MAJOR)
  const major = gcs.filter((g) => g[2] === MAJOR)
  const sum = (xs: [number, number, ...number[]][]) => xs.reduce((a, x) => a + x[1], 0)
  const long = stalls.filter((s) => s[1] >= 10)
  return {
    minorGcs: minor.length,
    minorGcMs: sum(minor),
    majorGcs: major.length,
    majorGcMs: sum(major),
    maxGcMs: Math.max(0, ...gcs.map((g) => g[1])),
    stalls10: long.length,
    stallMs: sum(long),
    maxStallMs: Math.max(0, ...stalls.map((s) => s[1])),
  }
}

export function tailReport(
  trace: [number, number][],
  server: ProbeData | null,
  client: ProbeData | null,
  slowMs = 15,
): TailReport {
  const from = Math.min(...trace.map((t) => t[0]))
  const to = Math.max(...trace.map((t) => t[0] + t[1]))
  const slow = trace.filter((t) => t[1] > slowMs)
  const bySecond: number[] = []
  for (const [due] of slow) {
    const s = Math.floor((due - from) / 1000)
    bySecond[s] = (bySecond[s] ?? 0) + 1
  }
  const overlapping = (xs: [number, number, ...number[]][]) =>
    slow.filter(([due, ms]) => xs.some(([at, d]) => at < due + ms && at + d > due)).length
  const gcs = server ? within<GcEvent>(server.gcs, from, to) : []
  const stalls = (p: ProbeData | null) =>
    p ? within<Stall>(p.stalls, from, to).filter((s) => s[1] >= 10) : []
  return {
    requests: trace.length,
    slow: slow.length,
    slowMs,
    slowBySecond: Array.from(bySecond, (n) => n ?? 0),
    onServerMinorGc: overlapping(gcs.filter((g) => g[2] !== MAJOR)),
    onServerMajorGc: overlapping(gcs.filter((g) => g[2] === MAJOR)),
    onServerStall: overlapping(stalls(server)),
    onClientStall: overlapping(stalls(client)),
    server: totals(server, from, to),
    client: totals(client, from, to),
  }
}
