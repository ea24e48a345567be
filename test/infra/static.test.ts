// Static checks of infra/, docker-compose.yml and the Dockerfile (Docker does not run in CI):
// promtool accepts the Prometheus config and rules, compose mounts only files that exist,
// the image is multi-stage, non-root, on Node 24, and every metric a dashboard panel or an
// alert queries is one the program exports (SPEC sections 7 and 9).
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { dirname, isAbsolute, join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { parse as parseYaml } from 'yaml'
import {
  ALERTS_FILE,
  DASHBOARD_FILE,
  PROMETHEUS_CONFIG,
  REPO_ROOT,
  requireBinary,
} from '../helpers/prometheus.ts'
import {
  dashboardTargets,
  dashboardVariableExprs,
  exportedMetricNames,
  metricNamesIn,
  ruleExprs,
  unknownMetrics,
} from '../helpers/promql.ts'

const repo = (p: string) => join(REPO_ROOT, p)

function promtool(...args: string[]): string {
  const bin = requireBinary('promtool')
  try {
    return execFileSync(bin, args, { cwd: REPO_ROOT, encoding: 'utf8', stdio: 'pipe' })
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string }
    throw new Error(`promtool ${args.join(' ')} failed:\n${e.stdout ?? ''}${e.stderr ?? ''}`)
  }
}

describe('promtool', () => {
  it('accepts infra/prometheus/prometheus.yml (and the rule file it names)', () => {
    expect(promtool('check', 'config', PROMETHEUS_CONFIG)).toMatch(/SUCCESS/)
  })

  it('accepts infra/prometheus/alerts.yml', () => {
    expect(promtool('check', 'rules', ALERTS_FILE)).toMatch(/SUCCESS/)
  })

  it('every alert has for, a severity and summary/description annotations', () => {
    const doc = parseYaml(readFileSync(ALERTS_FILE, 'utf8')) as {
      groups: { rules: Record<string, unknown>[] }[]
    }
    const alerts = doc.groups.flatMap((g) => g.rules).filter((r) => r.alert)
    const names = alerts.map((a) => a.alert)
    for (const want of ['Lag', 'Reconnect', 'Orphan', 'Error', 'TargetDown']) {
      expect(
        names.some((n) => String(n).includes(want)),
        `an alert about ${want}`,
      ).toBe(true)
    }
    for (const a of alerts) {
      expect(a.for, `${a.alert} for`).toMatch(/^\d+[smh]$/)
      const labels = a.labels as Record<string, string>
      expect(['warning', 'critical'], `${a.alert} severity`).toContain(labels?.severity)
      const ann = a.annotations as Record<string, string>
      expect(ann?.summary, `${a.alert} summary`).toBeTruthy()
      expect(ann?.description, `${a.alert} description`).toBeTruthy()
    }
  })

  it('prometheus.yml scrapes the compose indexer every 15s and loads alerts.yml', () => {
    const cfg = parseYaml(readFileSync(PROMETHEUS_CONFIG, 'utf8'))
    expect(cfg.rule_files).toContain('alerts.yml')
    const job = cfg.scrape_configs.find(
      (j: { job_name: string }) => j.job_name === 'prompt-appview',
    )
    expect(job.static_configs[0].targets).toContain('indexer:3000')
    expect(job.scrape_interval ?? cfg.global.scrape_interval).toBe('15s')
  })
})

describe('metric names in dashboards and alerts', () => {
  let known: Set<string>
  beforeAll(async () => {
    known = await exportedMetricNames()
  })

  const dashboardExprs = () => [
    ...dashboardTargets(DASHBOARD_FILE).map((t) => ({
      expr: t.expr,
      where: `panel "${t.panel}" ${t.refId}`,
    })),
    ...dashboardVariableExprs(DASHBOARD_FILE).map((v) => ({
      expr: v.expr,
      where: `variable $${v.name}`,
    })),
  ]
  const alertExprs = () =>
    ruleExprs(ALERTS_FILE).map((r) => ({ expr: r.expr, where: `rule ${r.name}` }))

  it('the registry exports the SPEC section 7 names', () => {
    for (const name of [
      'prompt_appview_events_total',
      'prompt_appview_ingest_lag_seconds',
      'prompt_appview_ingest_cursor',
      'prompt_appview_batch_duration_seconds_bucket',
      'prompt_appview_source_reconnects_total',
      'prompt_appview_prompts',
      'prompt_appview_http_request_duration_seconds_bucket',
      'prompt_appview_build_info',
      'prompt_appview_process_resident_memory_bytes',
    ]) {
      expect(known, name).toContain(name)
    }
    expect(known).not.toContain('prompt_appview_batch_duration_seconds') // histograms: suffixes only
  })

  it('every dashboard panel and variable queries only exported metrics', () => {
    const exprs = dashboardExprs()
    expect(exprs.length).toBeGreaterThan(10)
    expect(unknownMetrics(exprs, known)).toEqual([])
    // Each panel reads at least one program metric (not only `up`).
    for (const { expr, where } of exprs) {
      expect(metricNamesIn(expr).length, `${where} reads no metric: ${expr}`).toBeGreaterThan(0)
    }
  })

  it('every alert queries only exported metrics', () => {
    const exprs = alertExprs()
    expect(exprs.length).toBeGreaterThan(4)
    expect(unknownMetrics(exprs, known)).toEqual([])
  })

  it('the checker catches a renamed metric, a histogram without suffix and a typo in a label-only selector', () => {
    const [first] = dashboardExprs().filter((e) =>
      e.expr.includes('prompt_appview_ingest_lag_seconds'),
    )
    const renamed = first.expr.replace(
      'prompt_appview_ingest_lag_seconds',
      'prompt_appview_ingest_lag_secs',
    )
    expect(unknownMetrics([{ expr: renamed, where: 'copy' }], known)).toEqual([
      { where: 'copy', name: 'prompt_appview_ingest_lag_secs' },
    ])
    const alert = alertExprs().find((e) => e.expr.includes('prompt_appview_prompts'))!
    const typo = alert.expr.replaceAll('prompt_appview_prompts{', 'prompt_appview_prompt{')
    expect(unknownMetrics([{ expr: typo, where: 'a' }], known).map((b) => b.name)).toContain(
      'prompt_appview_prompt',
    )
    const cases = [
      'histogram_quantile(0.9, sum by (le) (rate(prompt_appview_batch_duration_seconds[5m])))',
      'sum by (outcome) (rate({__name__="prompt_appview_event_total"}[1m]))',
      '1 - prompt_appview_nodejs_heap_used_bytes / prompt_appview_nodejs_heap_size_total_bytes',
    ]
    for (const expr of cases) {
      expect(unknownMetrics([{ expr, where: 'x' }], known), expr).toHaveLength(1)
    }
  })
})

interface ComposeService {
  build?: string | { context?: string; dockerfile?: string }
  volumes?: (string | { type?: string; source?: string })[]
  env_file?: string | string[]
  depends_on?: string[] | Record<string, { condition?: string }>
  command?: string[]
  environment?: Record<string, string | null>
  healthcheck?: { test?: string[] }
}

describe('docker-compose.yml', () => {
  const text = readFileSync(repo('docker-compose.yml'), 'utf8')
  const compose = parseYaml(text, { merge: true }) as {
    services: Record<string, ComposeService>
    volumes?: Record<string, unknown>
  }
  const services = compose.services

  it('has postgres, migrate, indexer, prometheus and grafana', () => {
    for (const s of ['postgres', 'migrate', 'indexer', 'prometheus', 'grafana']) {
      expect(services, s).toHaveProperty(s)
    }
  })

  it('every host file or directory it builds from or mounts exists; named volumes are declared', () => {
    const base = dirname(repo('docker-compose.yml'))
    const hostPaths: string[] = []
    for (const [name, svc] of Object.entries(services)) {
      if (svc.build) {
        const b = typeof svc.build === 'string' ? { context: svc.build } : svc.build
        const ctx = join(base, b.context ?? '.')
        hostPaths.push(ctx, join(ctx, b.dockerfile ?? 'Dockerfile'))
      }
      for (const f of [svc.env_file ?? []].flat()) hostPaths.push(join(base, f))
      for (const v of svc.volumes ?? []) {
        const source =
          typeof v === 'string' ? v.split(':')[0] : v.type === 'bind' ? v.source : undefined
        if (!source) continue
        if (source.startsWith('.') || isAbsolute(source)) hostPaths.push(join(base, source))
        else expect(compose.volumes ?? {}, `${name}: named volume ${source}`).toHaveProperty(source)
      }
    }
    expect(hostPaths.length).toBeGreaterThan(4)
    expect(hostPaths.filter((p) => !existsSync(p))).toEqual([])
  })

  it('orders start-up: postgres healthy, then migrate, then the indexer', () => {
    expect(services.migrate.command).toEqual(['node', 'src/cli/main.ts', 'migrate'])
    expect(services.migrate.depends_on).toMatchObject({
      postgres: { condition: 'service_healthy' },
    })
    expect(services.indexer.command).toEqual(['node', 'src/cli/main.ts', 'run'])
    expect(services.indexer.depends_on).toMatchObject({
      migrate: { condition: 'service_completed_successfully' },
    })
    expect(services.indexer.environment?.HOST).toBe('0.0.0.0')
    expect(services.indexer.environment?.DATABASE_URL).toMatch(/^postgres:\/\/.*@postgres:5432\//)
    expect(services.indexer.healthcheck?.test?.join(' ')).toContain('/readyz')
    expect(services.postgres.healthcheck?.test?.join(' ')).toContain('pg_isready')
    for (const [name, svc] of Object.entries(services)) {
      const deps = Array.isArray(svc.depends_on)
        ? svc.depends_on
        : Object.keys(svc.depends_on ?? {})
      for (const d of deps) expect(services, `${name} depends on ${d}`).toHaveProperty(d)
    }
  })

  it('grafana provisioning agrees with the mounts and the dashboard', () => {
    const mounts = (services.grafana.volumes ?? []).map(String)
    const dashMount = mounts.find((m) => m.startsWith('./infra/grafana/dashboards:'))!
    const provider = parseYaml(
      readFileSync(repo('infra/grafana/provisioning/dashboards/dashboards.yml'), 'utf8'),
    )
    expect(dashMount.split(':')[1]).toBe(provider.providers[0].options.path)
    const ds = parseYaml(
      readFileSync(repo('infra/grafana/provisioning/datasources/prometheus.yml'), 'utf8'),
    )
    expect(ds.datasources[0].url).toBe('http://prometheus:9090')
    const dash = JSON.parse(readFileSync(DASHBOARD_FILE, 'utf8'))
    expect(dash.uid).toBe('prompt-appview')
    expect(dash.schemaVersion).toBeGreaterThanOrEqual(39)
    const dsVar = dash.templating.list.find((v: { type: string }) => v.type === 'datasource')
    expect(dsVar.current.value).toBe(ds.datasources[0].uid)
  })
})

describe('Dockerfile', () => {
  const lines = readFileSync(repo('Dockerfile'), 'utf8')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
  const froms = lines.filter((l) => /^FROM\s/i.test(l))
  const lastStage = lines.slice(lines.lastIndexOf(froms.at(-1)!))

  it('is a multi-stage build on node:24', () => {
    expect(froms.length).toBeGreaterThanOrEqual(2)
    for (const f of froms) expect(f).toMatch(/^FROM\s+node:24[-.\w]*(\s+AS\s+\w+)?$/i)
    expect(lines.some((l) => /^COPY\s+--from=/i.test(l))).toBe(true)
    expect(lines.some((l) => /npm ci\b.*--omit=dev/.test(l))).toBe(true)
  })

  it('runs as a non-root user, exposes 3000, has a health check and runs the indexer', () => {
    const users = lastStage.filter((l) => /^USER\s/i.test(l))
    expect(users.length).toBeGreaterThan(0)
    expect(users.at(-1)).not.toMatch(/^USER\s+(root|0)(:|$)/i)
    expect(lastStage).toContain('EXPOSE 3000')
    expect(lastStage.some((l) => /^HEALTHCHECK\s.*\/readyz/.test(l))).toBe(true)
    expect(lastStage.at(-1)).toBe('CMD ["node", "src/cli/main.ts", "run"]')
  })

  it('copies only sources that exist and are not docker-ignored', () => {
    const ignored = readFileSync(repo('.dockerignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'))
    const sources = lines
      .filter((l) => /^COPY\s/i.test(l) && !/--from=/i.test(l))
      .flatMap((l) =>
        l
          .split(/\s+/)
          .slice(1, -1)
          .filter((a) => !a.startsWith('--')),
      )
    expect(sources).toEqual(
      expect.arrayContaining([
        'src',
        'demo-network',
        'drizzle',
        'lexicons',
        'examples',
        'package.json',
      ]),
    )
    for (const s of sources) {
      expect(existsSync(repo(s)), s).toBe(true)
      expect(ignored, `${s} is in .dockerignore`).not.toContain(s)
      if (s === 'src' || s === 'demo-network') expect(statSync(repo(s)).isDirectory()).toBe(true)
    }
  })
})
