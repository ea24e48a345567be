// A real Prometheus scrapes a running prompt-appview (the `demo` command: a simulated
// network on loopback feeding the indexer) while it ingests. Every dashboard panel must
// then return data and every alert must evaluate without error: a renamed metric or a
// broken expression fails here, not in front of an operator.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { getJson, type ServingCli, startServing, waitFor } from '../helpers/cli.ts'
import {
  DASHBOARD_FILE,
  dashboardTargets,
  type PrometheusServer,
  startPrometheus,
} from '../helpers/prometheus.ts'

let app: ServingCli
let prom: PrometheusServer

beforeAll(async () => {
  app = await startServing(['demo', '--rate', '50', '--dids', '20'], {})
  await waitFor(
    'the demo to index something',
    async () => (await getJson(`${app.url}/v1/stats`)).prompts > 0,
  )
  // A 5 s scrape timeout: PGlite runs in the indexer's own thread, so on a loaded CI
  // machine (two test workers, a PDS, this Prometheus) a scrape can wait behind
  // transactions for seconds.
  prom = await startPrometheus({ target: `127.0.0.1:${app.port}`, scrapeInterval: '5s' })
}, 180_000)

afterAll(async () => {
  await prom?.close()
  if (app) {
    app.child.kill('SIGTERM')
    await app.exited
  }
})

describe('Prometheus against a live instance', () => {
  it('scrapes it while it ingests', async () => {
    expect((await prom.waitForTarget(90_000)).health).toBe('up')
    // last_over_time: a scrape that timed out on a loaded machine marks the series stale,
    // and an instant query would then see nothing.
    const cursor = async () =>
      Number((await prom.vector('last_over_time(prompt_appview_ingest_cursor[1m])'))[0]?.value?.[1])
    const cursor1 = await waitFor('a scraped cursor', async () => (await cursor()) || null)
    await waitFor('the scraped cursor to move', async () => (await cursor()) > cursor1, 60_000)
  }, 240_000)

  it('every dashboard panel returns data', async () => {
    // Give rate() and histogram_quantile() a few samples, with API traffic to measure.
    for (let i = 0; i < 30; i++) {
      await getJson(`${app.url}/v1/stats`)
      await new Promise((r) => setTimeout(r, 200))
    }
    const targets = dashboardTargets(DASHBOARD_FILE, {
      rateInterval: '1m',
      interval: '15s',
      range: '5m',
    })
    expect(targets.length).toBeGreaterThan(10)
    const emptyPanels = async () => {
      const empty: string[] = []
      for (const t of targets) {
        const data = await prom.query(t.expr)
        const n =
          Array.isArray(data.result) && data.resultType === 'vector' ? data.result.length : 1
        // Panels that filter with `> 0` (e.g. errors) are rightly empty on a healthy instance.
        if (n === 0 && !/>\s*0\s*\)?\s*$/.test(t.expr))
          empty.push(`${t.panel} ${t.refId}: ${t.expr}`)
      }
      return empty
    }
    // On a loaded machine scrapes time out now and then, so rate() over a short window can
    // lack its two samples for a while: ask again until the deadline. A renamed metric or a
    // broken expression stays empty and still fails.
    let empty = await emptyPanels()
    const deadline = Date.now() + 60_000
    while (empty.length > 0 && Date.now() < deadline) {
      await getJson(`${app.url}/v1/stats`)
      await new Promise((r) => setTimeout(r, 2000))
      empty = await emptyPanels()
    }
    expect(empty).toEqual([])
  }, 120_000)

  it('every alert rule evaluates without error', async () => {
    const rules = await prom.waitForRules(30_000)
    expect(rules.length).toBeGreaterThan(4)
    expect(rules.filter((r) => r.health !== 'ok' || r.lastError)).toEqual([])
  })
})
