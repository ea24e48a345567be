import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { spawnNode } from '../../test/helpers/node-child.ts'
import { type PacedResult, pacedLoad } from './paced.ts'
import { type ProbeData, startProbe } from './read-probe.ts'
import { isMain } from './scenario.ts'

// The paced client in a process of its own. In the benchmark's process, which also holds
// autocannon's leftovers and every result, its GC and timers stalled it for up to 47 ms
// (lookups) and 78 ms (lists) within one paced run, and each request due in a stall of the
// client counted as slow for the server under test. Alone, the client does nothing else;
// its own probe still reports what stalls remain, for the tail report.

export interface PacedRun {
  result: PacedResult
  /** [epoch ms the request was due, its latency ms] of every request. */
  trace: [number, number][]
  /** GC pauses and event-loop stalls of the client process during the run. */
  probe: ProbeData
}

/** The pace of a run: what pacedLoad reads of the benchmark's options. */
interface Pace {
  rate: number
  durationS: number
  connections: number
}

interface PacedJob extends Pace {
  base: string
  paths: string[]
}

const SELF = fileURLToPath(import.meta.url)

export async function pacedLoadInChild(base: string, paths: string[], o: Pace): Promise<PacedRun> {
  const dir = mkdtempSync(join(tmpdir(), 'paced-'))
  const job = join(dir, 'job.json')
  const out = join(dir, 'run.json')
  const spec: PacedJob = { base, paths, ...pick(o) }
  writeFileSync(job, JSON.stringify(spec))
  const child = spawnNode([SELF, job, out], {})
  try {
    const code = await child.exited
    if (code !== 0)
      throw new Error(`paced client exited with ${code}: ${child.output.join('').slice(-2000)}`)
    return JSON.parse(readFileSync(out, 'utf8')) as PacedRun
  } finally {
    await child.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

const pick = ({ rate, durationS, connections }: Pace): Pace => ({ rate, durationS, connections })

async function runJob(jobFile: string, outFile: string): Promise<void> {
  const job = JSON.parse(readFileSync(jobFile, 'utf8')) as PacedJob
  const trace: [number, number][] = []
  const stop = startProbe()
  const result = await pacedLoad(job.base, job.paths, pick(job), trace)
  const run: PacedRun = { result, trace, probe: stop() }
  writeFileSync(outFile, JSON.stringify(run))
}

if (isMain(import.meta.url)) await runJob(process.argv[2], process.argv[3])
