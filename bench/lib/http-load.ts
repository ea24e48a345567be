import autocannon, { type Result } from 'autocannon'
import { FILTER_NAMES } from '../../src/model/flags.ts'

// The read benchmark's load: autocannon runs over a set of paths, and the list pages to
// request (first pages of every filter and a few pages further down each).

const pick = <T>(xs: T[]): T => xs[Math.floor(Math.random() * xs.length)]

/** autocannon over random picks of `paths`; `rate` switches to its -R mode. */
export async function autocannonLoad(
  base: string,
  paths: string[],
  o: { connections: number; durationS: number },
  rate?: number,
) {
  const result: Result = await autocannon({
    url: base,
    connections: o.connections,
    duration: o.durationS,
    overallRate: rate,
    requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, path: pick(paths) }) }],
  })
  return {
    reqPerS: result.requests.average,
    p50: result.latency.p50,
    p90: result.latency.p90,
    p99: result.latency.p99,
    max: result.latency.max,
    total: result['2xx'] + result.non2xx,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
  }
}

/** Builds list URLs: first pages of every filter, and a few pages further down each. */
export async function listPaths(base: string, dids: string[], agents: string[]): Promise<string[]> {
  const firsts = [
    '/v1/prompts?limit=50',
    ...FILTER_NAMES.map((f) => `/v1/prompts?flag=${f}&limit=50`),
    ...dids.slice(0, 10).map((d) => `/v1/prompts?did=${encodeURIComponent(d)}&limit=50`),
    ...agents.slice(0, 10).map((a) => `/v1/prompts?agent=${encodeURIComponent(a)}&limit=50`),
  ]
  const out: string[] = []
  for (const first of firsts) {
    let path: string | null = first
    for (let page = 0; page < 4 && path; page++) {
      out.push(path)
      const res = await fetch(base + path)
      if (res.status !== 200) throw new Error(`${path}: HTTP ${res.status} ${await res.text()}`)
      const body = (await res.json()) as { cursor?: string }
      path = body.cursor ? `${first}&cursor=${encodeURIComponent(body.cursor)}` : null
    }
  }
  return out
}
