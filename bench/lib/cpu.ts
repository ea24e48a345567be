import { readFileSync } from 'node:fs'

// Where the CPU went during a measurement: this process versus everything else on the
// machine (Postgres, child processes). On a 2-core box that split says which side limits.

interface Snapshot {
  self: NodeJS.CpuUsage
  busyS: number
  at: number
}

function machineBusyS(): number {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1)
    const [user, nice, system, , , irq, softirq, steal] = f.map(Number)
    return (user + nice + system + irq + softirq + (steal ?? 0)) / 100
  } catch {
    return Number.NaN
  }
}

export function cpuSnapshot(): Snapshot {
  return { self: process.cpuUsage(), busyS: machineBusyS(), at: performance.now() }
}

export interface CpuSplit {
  wallS: number
  /** CPU-seconds of this process */
  selfS: number
  /** CPU-seconds of everything else (Postgres, other processes) */
  othersS: number
}

export function cpuSince(s: Snapshot): CpuSplit {
  const d = process.cpuUsage(s.self)
  const selfS = (d.user + d.system) / 1e6
  const wallS = (performance.now() - s.at) / 1000
  const othersS = machineBusyS() - s.busyS - selfS
  const r = (n: number) => Math.round(n * 100) / 100
  return { wallS: r(wallS), selfS: r(selfS), othersS: r(Math.max(0, othersS)) }
}
