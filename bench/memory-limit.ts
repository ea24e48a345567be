import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

// Runs a command under a cgroup v2 memory limit and reports what the limit did to it: the
// cgroup's peak memory (page cache included, as the kernel counts it against the limit), the
// process's own peak RSS (VmHWM), and how many OOM kills the cgroup saw. A measurement for a
// quiet machine, not a test: it prints the figures and exits with the command's status.
//
//   node bench/memory-limit.ts [--max 384M] [--seconds N] -- <command> [args...]
//
// Needs a writable cgroup v2 hierarchy with the memory controller (root, or a delegated
// subtree in CGROUP_ROOT); elsewhere it says why and exits 0 without running anything.

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

/** The cgroup v2 mount point whose memory controller can be used, or why there is none. */
function cgroupRoot(): string | { skip: string } {
  const root =
    process.env.CGROUP_ROOT ??
    readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .map((l) => l.split(' '))
      .find((f) => f[f.indexOf('-') + 1] === 'cgroup2')?.[4]
  if (!root) return { skip: 'no cgroup v2 hierarchy is mounted (cgroup v1 only)' }
  const controllers = existsSync(join(root, 'cgroup.controllers'))
    ? readFileSync(join(root, 'cgroup.controllers'), 'utf8')
    : ''
  if (!controllers.split(/\s+/).includes('memory'))
    return { skip: `the memory controller is not available in ${root} (it is bound to cgroup v1)` }
  try {
    writeFileSync(join(root, 'cgroup.subtree_control'), '+memory')
  } catch (err) {
    return { skip: `cannot enable the memory controller in ${root}: ${(err as Error).message}` }
  }
  return root
}

const read = (file: string): string | null => {
  try {
    return readFileSync(file, 'utf8')
  } catch {
    return null
  }
}

/** The peak RSS of a live process (VmHWM), in bytes. */
function vmHwm(pid: number): number | null {
  const m = /VmHWM:\s+(\d+) kB/.exec(read(`/proc/${pid}/status`) ?? '')
  return m ? Number(m[1]) * 1024 : null
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2))
  const root = cgroupRoot()
  if (typeof root !== 'string') {
    console.log(`memory-limit: skipped: ${root.skip}`)
    return 0
  }
  const group = join(root, `pav-memlimit-${process.pid}`)
  mkdirSync(group)
  writeFileSync(join(group, 'memory.max'), args.max)
  // The shell joins the cgroup, then execs the command: nothing runs outside the limit.
  const child = spawn(
    'sh',
    ['-c', 'echo $$ > "$0/cgroup.procs" && exec "$@"', group, ...args.command],
    { stdio: 'inherit' },
  )
  let peakRss = 0
  let peakCgroup = 0
  const sample = setInterval(() => {
    peakRss = Math.max(peakRss, vmHwm(child.pid ?? -1) ?? 0)
    peakCgroup = Math.max(peakCgroup, Number(read(join(group, 'memory.current')) ?? 0))
  }, 250)
  const timer =
    args.seconds === null ? null : setTimeout(() => child.kill('SIGTERM'), args.seconds * 1000)
  const exit = await new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  )
  clearInterval(sample)
  if (timer) clearTimeout(timer)
  const events = read(join(group, 'memory.events')) ?? ''
  const oomKills = Number(/oom_kill (\d+)/.exec(events)?.[1] ?? 0)
  const peak = Number(read(join(group, 'memory.peak')) ?? peakCgroup)
  const mb = (b: number) => `${(b / (1 << 20)).toFixed(0)} MB`
  console.log(
    JSON.stringify({
      limit: args.max,
      cgroupPeak: mb(peak),
      processPeakRss: mb(peakRss),
      oomKills,
      exit,
      stoppedAfterSeconds: args.seconds,
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
