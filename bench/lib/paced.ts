import { Agent, request } from 'node:http'
import { summarize } from './stats.ts'

// Open-loop load at a steady rate: request i is due at start + i/rate, whatever happened to
// earlier ones, over a pool of keep-alive connections, and its latency counts from when it
// was due (so a stall delays everything queued behind it, as a user would see it).
// autocannon's -R instead lets each connection send its per-second quota back to back at
// the top of every second, which measures bursts at full concurrency, not a steady rate.

export interface PacedResult {
  rate: number
  sent: number
  ok: number
  failed: number
  p50: number
  p90: number
  p99: number
  max: number
  /** Most requests waiting for a free connection at once. */
  maxQueued: number
}

export async function pacedLoad(
  base: string,
  paths: string[],
  o: { rate: number; durationS: number; connections: number },
  /** When given, gets [epoch ms the request was due, its latency ms] of every request. */
  trace?: [number, number][],
): Promise<PacedResult> {
  const url = new URL(base)
  const agent = new Agent({ keepAlive: true, maxSockets: o.connections })
  const total = Math.round(o.rate * o.durationS)
  const latencies: number[] = []
  let ok = 0
  let failed = 0
  let inflight = 0
  let maxQueued = 0
  const start = performance.now() + 50
  const fire = (due: number) =>
    new Promise<void>((resolve) => {
      inflight++
      maxQueued = Math.max(maxQueued, inflight - o.connections)
      const path = paths[Math.floor(Math.random() * paths.length)]
      const req = request(
        { host: url.hostname, port: url.port, path, agent, method: 'GET' },
        (res) => {
          res.on('data', () => {})
          res.on('end', () => {
            inflight--
            const ms = performance.now() - due
            latencies.push(ms)
            trace?.push([performance.timeOrigin + due, ms])
            if (res.statusCode === 200) ok++
            else failed++
            resolve()
          })
        },
      )
      req.on('error', () => {
        inflight--
        failed++
        resolve()
      })
      req.end()
    })
  const pending: Promise<void>[] = []
  let next = 0
  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = performance.now()
      while (next < total && start + (next * 1000) / o.rate <= now) {
        pending.push(fire(start + (next * 1000) / o.rate))
        next++
      }
      if (next >= total) return resolve()
      setTimeout(tick, Math.max(0, start + (next * 1000) / o.rate - performance.now()))
    }
    setTimeout(tick, 50)
  })
  await Promise.all(pending)
  agent.destroy()
  const s = summarize(latencies)
  return {
    rate: o.rate,
    sent: total,
    ok,
    failed,
    p50: s.p50,
    p90: s.p90,
    p99: s.p99,
    max: s.max,
    maxQueued,
  }
}
