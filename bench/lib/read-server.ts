import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, type NodeChild, spawnNode, waitForHttp } from './child.ts'
import type { PacedRun } from './paced-child.ts'
import { type LoadOptions, measureServer, type PathSets, type ServerRuns } from './read-load.ts'
import type { ProbeData } from './read-probe.ts'
import { type TailReport, tailReport } from './read-tail.ts'

// One server of the read benchmark in its own process (as a user runs it), probed: GC
// pauses and event-loop stalls of the server (read-probe.ts, preloaded) and of the paced
// client (a process of its own, paced-child.ts), lined up with every paced request
// (read-tail.ts).

const PROBE = new URL('./read-probe.ts', import.meta.url).pathname

export interface ServerSpec {
  args: string[]
  env: Record<string, string>
  execArgv: string[]
  /** Runs before the measurements, against the started server (checks, list paths). */
  before?: (base: string) => Promise<void>
}

export interface ProbedRuns {
  runs: ServerRuns
  rssMb: number
  tail: { lookupsPaced: TailReport; listsPaced: TailReport }
  /** Event-loop delay over the server's whole life. */
  serverDelay: ProbeData['delay'] | null
}

export async function measureChild(
  name: string,
  spec: ServerSpec,
  sets: PathSets,
  o: LoadOptions,
  log: (m: string) => void,
): Promise<ProbedRuns> {
  const dir = mkdtempSync(join(tmpdir(), 'read-probe-'))
  const file = join(dir, 'probe.json')
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const child: NodeChild = spawnNode(
    spec.args,
    { ...spec.env, PORT: String(port), BENCH_PROBE_FILE: file },
    { execArgv: ['--import', PROBE, ...spec.execArgv] },
  )
  try {
    await waitForHttp(`${base}/readyz`, child)
    await spec.before?.(base)
    const { runs, paced } = await measureServer(base, sets, o, log, name)
    const rssMb = child.rssMb()
    await child.stop()
    const server = readProbe(file)
    return {
      runs,
      rssMb,
      tail: {
        lookupsPaced: tailOf(paced.lookupsPaced, server),
        listsPaced: tailOf(paced.listsPaced, server),
      },
      serverDelay: server?.delay ?? null,
    }
  } finally {
    await child.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

const tailOf = (run: PacedRun, server: ProbeData | null): TailReport =>
  tailReport(run.trace, server, run.probe)

function readProbe(file: string): ProbeData | null {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as ProbeData
  } catch {
    return null
  }
}
