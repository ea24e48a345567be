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
}

export interface PathSets {
  uniform: string[]
  zipf: string[]
  lists: string[]
}

export interface ServerRuns {
  uniform: Awaited<ReturnType<typeof autocannonLoad>>
  zipf: Awaited<ReturnType<typeof autocannonLoad>>
  lists: Awaited<ReturnType<typeof autocannonLoad>>
  lookupsPaced: PacedResult
  listsPaced: PacedResult
}

/** The paced runs with every request's timing and the client's own pauses (read-tail.ts). */
export interface PacedTraces {
  lookupsPaced: PacedRun
  listsPaced: PacedRun
}

export async function measureServer(
  base: string,
  sets: PathSets,
  o: LoadOptions,
  log: (m: string) => void,
  name: string,
): Promise<{ runs: ServerRuns; paced: PacedTraces }> {
  await autocannonLoad(base, sets.uniform, { ...o, durationS: 3 })
  const uniform = await autocannonLoad(base, sets.uniform, o)
  const zipf = await autocannonLoad(base, sets.zipf, o)
  const lists = await autocannonLoad(base, sets.lists, o)
  const paced = {
    lookupsPaced: await pacedLoadInChild(base, sets.uniform, o),
    listsPaced: await pacedLoadInChild(base, sets.lists, o),
  }
  const runs = {
    uniform,
    zipf,
    lists,
    lookupsPaced: paced.lookupsPaced.result,
    listsPaced: paced.listsPaced.result,
  }
  log(
    `${name}: lookups ${uniform.reqPerS.toFixed(0)} (zipf ${zipf.reqPerS.toFixed(0)}) req/s, lists ${lists.reqPerS.toFixed(0)} req/s; paced ${o.rate}/s p99 ${runs.lookupsPaced.p99.toFixed(1)} / ${runs.listsPaced.p99.toFixed(1)} ms`,
  )
  return { runs, paced }
}
