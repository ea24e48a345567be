import { autocannonLoad } from './http-load.ts'
import type { PacedResult } from './paced.ts'
import { type PacedRun, pacedLoadInChild } from './paced-child.ts'

// The read benchmark's measurements of one server, run the same way against the product,
// the plain Fastify + postgres.js baseline and the bare constant route, so every ratio
// compares two runs of the same load in the same benchmark run.

/**
 * `n` picks of `paths` with Zipf-distributed ranks (weight 1/rank^s): a few prompts take
 * most requests, as on a real index where some prompts are linked and most are not.
 * Sampled once, so the load generator's uniform pick over the result is the skew.
 */
export function zipfPaths(paths: string[], n: number, s = 1): string[] {
  const cdf: number[] = []
  let total = 0
  for (let i = 1; i <= paths.length; i++) {
    total += 1 / i ** s
    cdf.push(total)
  }
  const out: string[] = []
  for (let k = 0; k < n; k++) {
    const u = Math.random() * total
    let lo = 0
    let hi = cdf.length - 1
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (cdf[mid] < u) lo = mid + 1
      else hi = mid
    }
    out.push(paths[lo])
  }
  return out
}

export interface LoadOptions {
  connections: number
  durationS: number
  rate: number
  /**
   * Reads the lookup keys' rows before each server's lookups: the servers are measured one
   * after another, and this machine's page cache is reclaimed within a minute or so, so
   * without it the server measured first finds the rows the dataset load left hot and the
   * next one finds them on disk.
   */
  prewarm?: () => Promise<void>
  /** Seconds of uncounted load before each measured part (three times it first); 1 unless set. */
  warmS?: number
}

export interface PathSets {
  uniform: string[]
  zipf: string[]
  lists: string[]
}

export interface ServerRuns {
  uniform: Load
  zipf: Load
  lists: Load
  lookupsPaced: PacedResult
  listsPaced: PacedResult
}

/** The paced runs with every request's timing and the client's own pauses (read-tail.ts). */
export interface PacedTraces {
  lookupsPaced: PacedRun
  listsPaced: PacedRun
}

type Load = Awaited<ReturnType<typeof autocannonLoad>>
type Kind = 'uniform' | 'zipf' | 'lists'

/** Several short runs of one load as one: their mean rate, median percentiles, worst max. */
function combined(runs: Load[]): Load {
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]
  const sum = (f: (r: Load) => number) => runs.reduce((t, r) => t + f(r), 0)
  return {
    reqPerS: sum((r) => r.reqPerS) / runs.length,
    p50: median(runs.map((r) => r.p50)),
    p90: median(runs.map((r) => r.p90)),
    p99: median(runs.map((r) => r.p99)),
    max: Math.max(...runs.map((r) => r.max)),
    total: sum((r) => r.total),
    non2xx: sum((r) => r.non2xx),
    errors: sum((r) => r.errors),
    timeouts: sum((r) => r.timeouts),
  }
}

/** One server's measurements, and the rate of each part of its loads (req/s, in order). */
export interface Measured {
  runs: ServerRuns
  paced: PacedTraces
  rounds: Record<Kind, number[]>
}

export interface Target {
  name: string
  base: string
}

/**
 * Every measurement of every server, interleaved: each load runs in `rounds` parts of
 * `durationS / rounds`, the servers in turn and in reverse order every other round (A B,
 * B A), each part after a second of the same load, so the servers being compared see the
 * same stretch of this shared machine and neither always goes first. On this machine the
 * same server's rate moved by a third from one run to the next; measured one whole server
 * after another, that drift landed on the ratio. The paced runs go once each, lookups in
 * the servers' order and lists in reverse.
 */
export async function measureServers(
  targets: Target[],
  sets: PathSets,
  o: LoadOptions & { rounds: number },
  log: (m: string) => void,
): Promise<Record<string, Measured>> {
  const part = { ...o, durationS: Math.max(1, o.durationS / o.rounds) }
  const order = (r: number) => (r % 2 === 0 ? targets : [...targets].reverse())
  // The warm-up is for each server's JIT; the page cache is warmed before each measured part.
  const warmS = o.warmS ?? 1
  if (warmS > 0)
    for (const t of targets)
      await autocannonLoad(t.base, sets.uniform, { ...o, durationS: 3 * warmS })
  const loads = new Map<string, Record<Kind, Load[]>>(
    targets.map((t) => [t.name, { uniform: [], zipf: [], lists: [] }]),
  )
  for (let r = 0; r < o.rounds; r++)
    for (const kind of ['uniform', 'zipf', 'lists'] as const)
      for (const t of order(r)) {
        if (kind === 'uniform') await o.prewarm?.()
        // A second of the same load first, not counted: while the other servers had their
        // turns this one's answer cache aged (entries live 15-30 s), which a server that is
        // never left idle would not see.
        if (warmS > 0) await autocannonLoad(t.base, sets[kind], { ...o, durationS: warmS })
        loads.get(t.name)?.[kind].push(await autocannonLoad(t.base, sets[kind], part))
      }
  const pacedOf = async (kind: 'uniform' | 'lists', ts: Target[]) => {
    const out = new Map<string, PacedRun>()
    for (const t of ts) {
      await o.prewarm?.()
      out.set(t.name, await pacedLoadInChild(t.base, sets[kind], o))
    }
    return out
  }
  const lookupsPaced = await pacedOf('uniform', order(0))
  const listsPaced = await pacedOf('lists', order(1))
  const out: Record<string, Measured> = {}
  for (const t of targets) {
    const l = loads.get(t.name) as Record<Kind, Load[]>
    const paced = {
      lookupsPaced: lookupsPaced.get(t.name) as PacedRun,
      listsPaced: listsPaced.get(t.name) as PacedRun,
    }
    const runs: ServerRuns = {
      uniform: combined(l.uniform),
      zipf: combined(l.zipf),
      lists: combined(l.lists),
      lookupsPaced: paced.lookupsPaced.result,
      listsPaced: paced.listsPaced.result,
    }
    log(
      `${t.name}: lookups ${runs.uniform.reqPerS.toFixed(0)} (zipf ${runs.zipf.reqPerS.toFixed(0)}) req/s, lists ${runs.lists.reqPerS.toFixed(0)} req/s; paced ${o.rate}/s p99 ${runs.lookupsPaced.p99.toFixed(1)} / ${runs.listsPaced.p99.toFixed(1)} ms; uniform by round ${l.uniform.map((u) => u.reqPerS.toFixed(0)).join(', ')}`,
    )
    const rate = (kind: Kind) => l[kind].map((x) => x.reqPerS)
    out[t.name] = {
      runs,
      paced,
      rounds: { uniform: rate('uniform'), zipf: rate('zipf'), lists: rate('lists') },
    }
  }
  return out
}
