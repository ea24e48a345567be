// A real Prometheus for tests: scrapes one target every second with the repo's alert rules
// loaded, on a random loopback port, with throwaway storage. Needs the `prometheus` binary
// (scripts/ci-system-deps.sh installs Debian's package).
import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePort } from './node-child.ts'

export { dashboardTargets } from './promql.ts'

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
export const ALERTS_FILE = join(REPO_ROOT, 'infra/prometheus/alerts.yml')
export const PROMETHEUS_CONFIG = join(REPO_ROOT, 'infra/prometheus/prometheus.yml')
export const DASHBOARD_FILE = join(REPO_ROOT, 'infra/grafana/dashboards/prompt-appview.json')

/** Absolute path of a binary on PATH, or null. */
export function findBinary(name: string): string | null {
  try {
    return execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim() || null
  } catch {
    return null
  }
}

/** The binary's path; throws with the fix when it is not installed. */
export function requireBinary(name: 'prometheus' | 'promtool'): string {
  const path = findBinary(name)
  if (!path) {
    throw new Error(
      `${name} not found on PATH: run scripts/ci-system-deps.sh (Debian package prometheus)`,
    )
  }
  return path
}

export interface PrometheusOptions {
  /** host:port to scrape, e.g. `127.0.0.1:3000`. */
  target: string
  metricsPath?: string
  /** The job label; the dashboard's `$job` default and the alerts expect `prompt-appview`. */
  jobName?: string
  scrapeInterval?: string
  evaluationInterval?: string
  /** Rule files to load; the repo's alerts.yml by default, [] for none. */
  ruleFiles?: string[]
}

export interface Sample {
  metric: Record<string, string>
  value?: [number, string]
  values?: [number, string][]
}

export interface QueryData {
  resultType: 'vector' | 'matrix' | 'scalar' | 'string'
  result: Sample[] | [number, string]
}

export interface RuleState {
  group: string
  name: string
  type: 'alerting' | 'recording'
  query: string
  health: 'ok' | 'err' | 'unknown'
  lastError?: string
  lastEvaluation: string
  state?: string
}

export interface TargetState {
  scrapeUrl: string
  health: 'up' | 'down' | 'unknown'
  lastError: string
  labels: Record<string, string>
}

export interface PrometheusServer {
  url: string
  port: number
  configFile: string
  /** Instant query; throws with Prometheus's error (bad expression, etc.). */
  query(expr: string, time?: number): Promise<QueryData>
  /** The instant query's vector result (throws if the result is not a vector). */
  vector(expr: string): Promise<Sample[]>
  targets(): Promise<TargetState[]>
  /** Waits until the target has been scraped successfully; returns its state. */
  waitForTarget(timeoutMs?: number): Promise<TargetState>
  rules(): Promise<RuleState[]>
  /** Waits until every loaded rule has been evaluated at least once; returns them. */
  waitForRules(timeoutMs?: number): Promise<RuleState[]>
  /** Everything Prometheus wrote to stderr so far. */
  logs(): string
  close(): Promise<void>
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const NEVER = '0001-01-01T00:00:00Z'

async function api<T>(base: string, path: string): Promise<T> {
  const res = await fetch(base + path)
  const body = (await res.json()) as { status: string; data: T; errorType?: string; error?: string }
  if (body.status !== 'success') {
    throw new Error(`Prometheus ${path}: ${body.errorType ?? res.status}: ${body.error ?? ''}`)
  }
  return body.data
}

function configYaml(o: PrometheusOptions): string {
  const rules = o.ruleFiles ?? [ALERTS_FILE]
  return [
    'global:',
    `  scrape_interval: ${o.scrapeInterval ?? '1s'}`,
    `  evaluation_interval: ${o.evaluationInterval ?? '1s'}`,
    `  scrape_timeout: ${o.scrapeInterval ?? '1s'}`,
    rules.length ? 'rule_files:' : 'rule_files: []',
    ...rules.map((f) => `  - ${JSON.stringify(f)}`),
    'scrape_configs:',
    `  - job_name: ${JSON.stringify(o.jobName ?? 'prompt-appview')}`,
    `    metrics_path: ${JSON.stringify(o.metricsPath ?? '/metrics')}`,
    '    static_configs:',
    `      - targets: [${JSON.stringify(o.target)}]`,
    '',
  ].join('\n')
}

async function launch(bin: string, dir: string, configFile: string) {
  const port = await freePort()
  const child = spawn(
    bin,
    [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  )
  let stderr = ''
  child.stderr?.on('data', (d) => {
    stderr += String(d)
  })
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 20_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) break
    try {
      if ((await fetch(`${url}/-/ready`)).ok) return { child, port, url, logs: () => stderr }
    } catch {
      // not listening yet
    }
    await sleep(100)
  }
  child.kill('SIGKILL')
  throw new Error(`prometheus did not become ready on ${url}:\n${stderr}`)
}

export async function startPrometheus(opts: PrometheusOptions): Promise<PrometheusServer> {
  const bin = requireBinary('prometheus')
  const dir = mkdtempSync(join(tmpdir(), 'prompt-appview-prom-'))
  const configFile = join(dir, 'prometheus.yml')
  writeFileSync(configFile, configYaml(opts))
  let started: Awaited<ReturnType<typeof launch>> | undefined
  for (let attempt = 0; !started; attempt++) {
    try {
      started = await launch(bin, dir, configFile)
    } catch (err) {
      // The free port may have been taken between probing and binding: try another.
      if (attempt >= 2 || !/address already in use/.test(String(err))) {
        rmSync(dir, { recursive: true, force: true })
        throw err
      }
    }
  }
  const { child, port, url, logs } = started
  const onExit = () => child.kill('SIGKILL')
  process.once('exit', onExit)

  const server: PrometheusServer = {
    url,
    port,
    configFile,
    query: (expr, time) => {
      const q = new URLSearchParams({ query: expr })
      if (time !== undefined) q.set('time', String(time))
      return api<QueryData>(url, `/api/v1/query?${q}`).catch((err: Error) => {
        throw new Error(`${err.message}\n  in: ${expr}`)
      })
    },
    async vector(expr) {
      const data = await server.query(expr)
      if (data.resultType !== 'vector')
        throw new Error(`not a vector (${data.resultType}): ${expr}`)
      return data.result as Sample[]
    },
    async targets() {
      const data = await api<{ activeTargets: TargetState[] }>(url, '/api/v1/targets?state=active')
      return data.activeTargets
    },
    async waitForTarget(timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs
      let last: TargetState | undefined
      while (Date.now() < deadline) {
        last = (await server.targets()).find(
          (t) => t.labels.job === (opts.jobName ?? 'prompt-appview'),
        )
        if (last?.health === 'up') return last
        await sleep(200)
      }
      throw new Error(`target ${opts.target} not up: ${JSON.stringify(last)}\n${logs()}`)
    },
    async rules() {
      type Group = { name: string; rules: Omit<RuleState, 'group'>[] }
      const data = await api<{ groups: Group[] }>(url, '/api/v1/rules')
      return data.groups.flatMap((g) => g.rules.map((r) => ({ ...r, group: g.name })))
    },
    async waitForRules(timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs
      let rules: RuleState[] = []
      while (Date.now() < deadline) {
        rules = await server.rules()
        if (rules.every((r) => r.lastEvaluation && r.lastEvaluation !== NEVER)) return rules
        await sleep(200)
      }
      const pending = rules.filter((r) => r.lastEvaluation === NEVER).map((r) => r.name)
      throw new Error(`rules never evaluated: ${pending.join(', ')}`)
    },
    logs,
    async close() {
      process.removeListener('exit', onExit)
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r))
        child.kill('SIGTERM')
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000)
        await exited
        clearTimeout(timer)
      }
      rmSync(dir, { recursive: true, force: true })
    },
  }
  return server
}
