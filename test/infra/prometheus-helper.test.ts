// The Prometheus test helper against a trivial target: an HTTP server exposing the
// program's metrics registry (no database, no app). Also evaluates every dashboard panel
// query and every alert rule in a real Prometheus, so a PromQL error cannot hide.
import { existsSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createMetrics } from '../../src/observe/metrics.ts'
import {
  DASHBOARD_FILE,
  dashboardTargets,
  type PrometheusServer,
  startPrometheus,
} from '../helpers/prometheus.ts'
import { COLLECTIONS } from '../helpers/promql.ts'

const metrics = createMetrics({ version: 'test', collections: COLLECTIONS })
metrics.httpRequestDurationSeconds.observe(
  { route: '/v1/stats', method: 'GET', status_code: '200' },
  0.01,
)
metrics.batchDurationSeconds.observe(0.02)
metrics.eventsTotal.inc({
  source: 'jetstream',
  collection: COLLECTIONS[0],
  op: 'create',
  outcome: 'indexed',
})
metrics.ingestCursor.set(1_764_460_800_013_615)
metrics.ingestLagSeconds.set(1.5)

let target: Server
let prom: PrometheusServer

beforeAll(async () => {
  target = createServer(async (req, res) => {
    if (req.url !== '/metrics') return void res.writeHead(404).end()
    res.setHeader('content-type', metrics.registry.contentType)
    res.end(await metrics.registry.metrics())
  })
  await new Promise<void>((ok) => target.listen(0, '127.0.0.1', ok))
  const { port } = target.address() as AddressInfo
  prom = await startPrometheus({ target: `127.0.0.1:${port}` })
})

afterAll(async () => {
  await prom?.close()
  await new Promise((ok) => target?.close(ok))
})

describe('test/helpers/prometheus.ts', () => {
  it('scrapes the target and answers instant queries', async () => {
    const t = await prom.waitForTarget()
    expect(t.health).toBe('up')
    const up = await prom.vector('up{job="prompt-appview"}')
    expect(up.map((s) => s.value?.[1])).toEqual(['1'])
    const build = await prom.vector('prompt_appview_build_info')
    expect(build[0].metric.version).toBe('test')
    const cursor = await prom.vector('prompt_appview_ingest_cursor')
    expect(Number(cursor[0].value?.[1])).toBe(1_764_460_800_013_615)
  })

  it('reports a bad expression as an error naming it', async () => {
    await expect(prom.query('sum by (outcome (prompt_appview_events_total)')).rejects.toThrow(
      /bad_data[\s\S]*in: sum by/,
    )
  })

  it('evaluates every alert rule of infra/prometheus/alerts.yml without error', async () => {
    const rules = await prom.waitForRules()
    expect(rules.length).toBeGreaterThan(4)
    const broken = rules.filter((r) => r.health !== 'ok' || r.lastError)
    expect(broken).toEqual([])
    // Healthy target, zero lag, no errors: nothing fires.
    expect(rules.filter((r) => r.state === 'firing').map((r) => r.name)).toEqual([])
  })

  it('evaluates every dashboard panel query; unfiltered ones return series', async () => {
    await prom.waitForTarget()
    // The GC histogram has series only once a collection ran since createMetrics: in a
    // worker that already ran other test files none may have, so make some garbage.
    for (let i = 0; i < 100; i++) new Array(100_000).fill(i)
    // rate()/deriv() need two samples inside the window.
    await new Promise((r) => setTimeout(r, 2_500))
    const targets = dashboardTargets(DASHBOARD_FILE, { rateInterval: '1m' })
    expect(targets.length).toBeGreaterThan(10)
    const empty: string[] = []
    for (const t of targets) {
      const data = await prom.query(t.expr)
      const n = Array.isArray(data.result) && data.resultType === 'vector' ? data.result.length : 1
      if (n === 0 && !/>\s*0\s*$/.test(t.expr)) empty.push(`${t.panel} ${t.refId}: ${t.expr}`)
    }
    expect(empty).toEqual([])
  })

  it('close() stops the server and removes its files', async () => {
    const other = await startPrometheus({ target: '127.0.0.1:1', ruleFiles: [] })
    const dir = other.configFile.replace(/\/prometheus\.yml$/, '')
    expect((await fetch(`${other.url}/-/ready`)).ok).toBe(true)
    await other.close()
    await expect(fetch(`${other.url}/-/ready`)).rejects.toThrow()
    expect(existsSync(dir)).toBe(false)
  })
})
