import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'

// Runs a command under a cgroup memory limit and reports what the limit did to it: the
// cgroup's peak memory (page cache included, as the kernel counts it against the limit), the
// process's own peak RSS (VmHWM), and how many OOM kills the cgroup saw. A measurement for a
// quiet machine, not a test: it prints the figures and exits with the command's status.
//
//   node bench/memory-limit.ts [--max 384M] [--seconds N] -- <command> [args...]
//
// Needs a writable memory cgroup: v2 (root, or a delegated subtree in CGROUP_ROOT), else
// v1's memory hierarchy, where the page cache counts against the limit too; elsewhere it
// says why and exits 0 without running anything.

interface Args {
  max: string
  seconds: number | null
  command: string[]
}

function parseArgs(argv: string[]): Args {
  const dash = argv.indexOf('--')
  const own = dash === -1 ? argv : argv.slice(0, dash)
  const command = dash === -1 ? [] : argv.slice(dash + 1)
  const value = (name: string) => {
    const i = own.indexOf(name)
    return i === -1 ? null : (own[i + 1] ?? null)
  }
  if (command.length === 0)
    throw new Error('usage: memory-limit.ts [--max 384M] [--seconds N] -- <command...>')
  const seconds = value('--seconds')
  return {
    max: value('--max') ?? '384M',
    seconds: seconds === null ? null : Number(seconds),
    command,
  }
}

/** A memory cgroup this process can make: v2 (`memory.max`), else a writable v1 hierarchy. */
interface Hierarchy {
  version: 1 | 2
  root: string
}

function mountOf(type: string, option?: string): string | undefined {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' '))
    .find((f) => {
      const dash = f.indexOf('-')
      return f[dash + 1] === type && (!option || (f[dash + 3] ?? '').split(',').includes(option))
    })?.[4]
}

function cgroupV2(): Hierarchy | string {
  const root = process.env.CGROUP_ROOT ?? mountOf('cgroup2')
  if (!root) return 'no cgroup v2 hierarchy is mounted'
  const controllers = existsSync(join(root, 'cgroup.controllers'))
    ? readFileSync(join(root, 'cgroup.controllers'), 'utf8')
    : ''
  if (!controllers.split(/\s+/).includes('memory'))
    return `the memory controller is not available in ${root} (it is bound to cgroup v1)`
  try {
    writeFileSync(join(root, 'cgroup.subtree_control'), '+memory')
  } catch (err) {
    return `cannot enable the memory controller in ${root}: ${(err as Error).message}`
  }
  return { version: 2, root }
}

/** cgroup v2 where it can be used; else cgroup v1's memory hierarchy; else why neither. */
function cgroupHierarchy(): Hierarchy | { skip: string } {
  const v2 = cgroupV2()
  if (typeof v2 !== 'string') return v2
  const v1 = mountOf('cgroup', 'memory')
  if (!v1) return { skip: `${v2}, and no cgroup v1 memory hierarchy either` }
  return { version: 1, root: v1 }
}

/** The file names of each version for the same facts. */
const FILES = {
  1: {
    limit: 'memory.limit_in_bytes',
    current: 'memory.usage_in_bytes',
    peak: 'memory.max_usage_in_bytes',
    events: 'memory.oom_control',
  },
  2: {
    limit: 'memory.max',
    current: 'memory.current',
    peak: 'memory.peak',
    events: 'memory.events',
  },
} as const

const read = (file: string): string | null => {
  try {
    return readFileSync(file, 'utf8')
  } catch {
    return null
  }
}

/** A process's status field in bytes (VmRSS now, VmHWM its peak), or 0 once it is gone. */
function status(pid: string, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(read(`/proc/${pid}/status`) ?? '')
  return m ? Number(m[1]) * 1024 : 0
}

/** Samples the group's processes: the largest single peak RSS and the largest summed RSS. */
class RssSampler {
  processPeak = 0
  treePeak = 0
  private readonly procs: string
  constructor(procs: string) {
    this.procs = procs
  }
  sample(): void {
    const pids = (read(this.procs) ?? '').split('\n').filter(Boolean)
    let sum = 0
    for (const pid of pids) {
      sum += status(pid, 'VmRSS')
      this.processPeak = Math.max(this.processPeak, status(pid, 'VmHWM'))
    }
    this.treePeak = Math.max(this.treePeak, sum)
  }
}

function makeGroup(h: Hierarchy, max: string): string {
  const group = join(h.root, `pav-memlimit-${process.pid}`)
  mkdirSync(group)
  writeFileSync(join(group, FILES[h.version].limit), max)
  // Without a memsw limit, v1 could page the group out to swap instead of holding it.
  if (h.version === 1 && existsSync(join(group, 'memory.memsw.limit_in_bytes')))
    writeFileSync(join(group, 'memory.memsw.limit_in_bytes'), max)
  return group
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2))
  const h = cgroupHierarchy()
  if ('skip' in h) {
    console.log(`memory-limit: skipped: ${h.skip}`)
    return 0
  }
  const files = FILES[h.version]
  const group = makeGroup(h, args.max)
  // The shell joins the cgroup, then execs the command: nothing runs outside the limit.
  const child = spawn(
    'sh',
    ['-c', 'echo $$ > "$0/cgroup.procs" && exec "$@"', group, ...args.command],
    { stdio: 'inherit' },
  )
  const rss = new RssSampler(join(group, 'cgroup.procs'))
  const started = Date.now()
  const sample = setInterval(() => rss.sample(), 250)
  const timer =
    args.seconds === null ? null : setTimeout(() => child.kill('SIGTERM'), args.seconds * 1000)
  const exit = await new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  )
  clearInterval(sample)
  if (timer) clearTimeout(timer)
  const oomKills = Number(/oom_kill (\d+)/.exec(read(join(group, files.events)) ?? '')?.[1] ?? 0)
  const mb = (b: number) => `${(b / (1 << 20)).toFixed(0)} MB`
  console.log(
    JSON.stringify({
      cgroup: `v${h.version}`,
      limit: args.max,
      cgroupPeak: mb(Number(read(join(group, files.peak)) ?? 0)),
      processPeakRss: mb(rss.processPeak),
      treePeakRss: mb(rss.treePeak),
      limitHits: h.version === 1 ? Number(read(join(group, 'memory.failcnt')) ?? 0) : undefined,
      oomKills,
      exit,
      seconds: Math.round((Date.now() - started) / 1000),
      loadavg: loadavg().map((x) => x.toFixed(2)),
    }),
  )
  try {
    rmdirSync(group)
  } catch (err) {
    console.error(`memory-limit: could not remove ${group}: ${(err as Error).message}`)
  }
  return exit.code ?? (oomKills > 0 ? 137 : 1)
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err instanceof Error ? err.message : err)
    process.exit(2)
  },
)
