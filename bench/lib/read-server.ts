import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, type NodeChild, spawnNode, waitForHttp } from '../../test/helpers/node-child.ts'
import type { PacedRun } from './paced-child.ts'
import {
  type LoadOptions,
  type Measured,
  measureServers,
  type PathSets,
  type ServerRuns,
} from './read-load.ts'
import type { ProbeData } from './read-probe.ts'
import { type TailReport, tailReport } from './read-tail.ts'

// The read benchmark's servers, each in its own process (as a user runs it) and all up at
// once, so their measurements can take turns; probed: GC pauses and event-loop stalls of
// each server (read-probe.ts, preloaded) and of the paced client (a process of its own,
// paced-child.ts), lined up with every paced request (read-tail.ts).

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
  /** Each load's rate in each of its parts (read-load.ts measureServers). */
  rounds: Measured['rounds']
  rssMb: number
  tail: { lookupsPaced: TailReport; listsPaced: TailReport }
  /** Event-loop delay over the server's whole life. */
  serverDelay: ProbeData['delay'] | null
}

interface Started {
  name: string
  base: string
  child: NodeChild
  dir: string
  probeFile: string
}

async function startProbed(name: string, spec: ServerSpec): Promise<Started> {
  const dir = mkdtempSync(join(tmpdir(), 'read-probe-'))
  const probeFile = join(dir, 'probe.json')
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const child: NodeChild = spawnNode(
    spec.args,
    { ...spec.env, PORT: String(port), BENCH_PROBE_FILE: probeFile },
    { execArgv: ['--import', PROBE, ...spec.execArgv] },
  )
  const started = { name, base, child, dir, probeFile }
  try {
    await waitForHttp(`${base}/readyz`, child)
    await spec.before?.(base)
    return started
  } catch (err) {
    await stopProbed(started)
    throw err
  }
}

async function stopProbed(s: Started): Promise<ProbeData | null> {
  try {
    await s.child.stop()
    return readProbe(s.probeFile)
  } finally {
    rmSync(s.dir, { recursive: true, force: true })
  }
}

/**
 * Starts every server (in `specs`' order, each `before` once it answers), measures them
 * interleaved (read-load.ts measureServers), then stops them and lines their probes up
 * with the paced runs.
 */
export async function measureChildren(
  specs: Record<string, ServerSpec>,
  sets: PathSets,
  o: LoadOptions & { rounds: number },
  log: (m: string) => void,
): Promise<Record<string, ProbedRuns>> {
  const started: Started[] = []
  try {
    for (const [name, spec] of Object.entries(specs)) started.push(await startProbed(name, spec))
    const measured = await measureServers(started, sets, o, log)
    const out: Record<string, ProbedRuns> = {}
    while (started.length > 0) {
      const s = started.shift() as Started
      const rssMb = s.child.rssMb()
      const server = await stopProbed(s)
      const { runs, paced, rounds } = measured[s.name]
      out[s.name] = {
        runs,
        rounds,
        rssMb,
        tail: {
          lookupsPaced: tailOf(paced.lookupsPaced, server),
          listsPaced: tailOf(paced.listsPaced, server),
        },
        serverDelay: server?.delay ?? null,
      }
    }
    return out
  } finally {
    for (const s of started) await stopProbed(s)
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
