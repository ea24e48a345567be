import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, type NodeChild, spawnNode, waitForHttp } from './child.ts'
import { type LoadOptions, measureServer, type PathSets, type ServerRuns } from './read-load.ts'
import { type ProbeData, startProbe } from './read-probe.ts'
import { type TailReport, tailReport } from './read-tail.ts'

// One server of the read benchmark in its own process (as a user runs it), probed: GC
// pauses and event-loop stalls of the server (read-probe.ts, preloaded) and of this
// process (the load generator), lined up with every paced request (read-tail.ts).

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
  const traces = { lookupsPaced: [] as [number, number][], listsPaced: [] as [number, number][] }
  try {
    await waitForHttp(`${base}/readyz`, child)
    await spec.before?.(base)
    const stopClient = startProbe()
    const runs = await measureServer(base, sets, o, log, name, traces)
    const client = stopClient()
    const rssMb = child.rssMb()
    await child.stop()
    const server = readProbe(file)
    return {
      runs,
      rssMb,
      tail: {
        lookupsPaced: tailReport(traces.lookupsPaced, server, client),
        listsPaced: tailReport(traces.listsPaced, server, client),
      },
      serverDelay: server?.delay ?? null,
    }
  } finally {
    await child.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

function readProbe(file: string): ProbeData | null {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as ProbeData
  } catch {
    return null
  }
}
