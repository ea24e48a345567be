import { readdirSync, readFileSync } from 'node:fs'

// A process and all its descendants, read from /proc: what a person sizing a box or a
// container sees of a command (`npm start` is npm, a shell and node). RSS and the kernel's
// high-water mark (VmHWM) are summed over the tree; CPU is the ticks of the tree's live
// processes (utime + stime) plus what they reaped from children that exited.

const TICK_S = 0.01 // USER_HZ is 100 on Linux

export interface TreeSample {
  /** Each process of the tree: its name (comm: `node`, `sh`, npm's title) and memory. */
  procs: Array<{ pid: number; comm: string; rssMb: number; hwmMb: number }>
  rssMb: number
  /** Sum over the tree of each process's own peak: an upper bound of the tree's peak. */
  hwmMb: number
  cpuS: number
}

function statOf(pid: number): { ppid: number; cpuTicks: number } | null {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Fields after the command name, which may hold spaces and parentheses.
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ')
    const ticks = Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])
    return { ppid: Number(f[1]), cpuTicks: ticks }
  } catch {
    return null
  }
}

function memOf(pid: number): { rssMb: number; hwmMb: number } {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8')
    const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+) kB`).exec(s)?.[1] ?? 0)
    return { rssMb: kb('VmRSS') / 1024, hwmMb: kb('VmHWM') / 1024 }
  } catch {
    return { rssMb: 0, hwmMb: 0 }
  }
}

/** The tree under `root` now. */
export function sampleTree(root: number): TreeSample {
  const children = new Map<number, number[]>()
  const stats = new Map<number, { ppid: number; cpuTicks: number }>()
  for (const name of readdirSync('/proc')) {
    const pid = Number(name)
    if (!Number.isInteger(pid)) continue
    const st = statOf(pid)
    if (!st) continue
    stats.set(pid, st)
    const list = children.get(st.ppid) ?? []
    list.push(pid)
    children.set(st.ppid, list)
  }
  const pids: number[] = []
  const stack = stats.has(root) ? [root] : []
  while (stack.length) {
    const p = stack.pop()!
    pids.push(p)
    stack.push(...(children.get(p) ?? []))
  }
  const procs = pids.map((pid) => ({ pid, comm: commOf(pid), ...memOf(pid) }))
  const sum = (k: 'rssMb' | 'hwmMb') => procs.reduce((a, p) => a + p[k], 0)
  const ticks = pids.reduce((a, p) => a + stats.get(p)!.cpuTicks, 0)
  return { procs, rssMb: sum('rssMb'), hwmMb: sum('hwmMb'), cpuS: ticks * TICK_S }
}

function commOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim()
  } catch {
    return '?'
  }
}
