// Static helpers for the infra tests: pull PromQL out of the Grafana dashboard and the
// alert rules, find the metric names an expression reads, and list the names the program
// exports (SPEC section 7: a dashboard or alert querying an unknown metric fails a test).
import { readFileSync } from 'node:fs'
import { parse as parseYaml } from 'yaml'
import { createMetrics } from '../../src/observe/metrics.ts'

export const COLLECTIONS = [
  'xyz.quasigod.lab.letta.compiledPrompt',
  'xyz.quasigod.lab.letta.conversation',
  'xyz.quasigod.lab.letta.agent',
]

/** Series Prometheus itself attaches to every scrape or rule evaluation. */
export const PROMETHEUS_SYNTHETIC = [
  'up',
  'scrape_duration_seconds',
  'scrape_samples_scraped',
  'scrape_samples_post_metric_relabeling',
  'scrape_series_added',
  'ALERTS',
  'ALERTS_FOR_STATE',
]

/** Every series name the program's registry exposes (histograms and summaries expanded). */
export async function exportedMetricNames(): Promise<Set<string>> {
  const { registry } = createMetrics({ version: 'test', collections: COLLECTIONS })
  const names = new Set<string>()
  for (const m of await registry.getMetricsAsJSON()) {
    // A histogram exposes only its _bucket, _sum and _count series, not its base name.
    const type = String(m.type)
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(m.name + s)
    else names.add(m.name)
    if (type === 'summary') for (const s of ['_sum', '_count']) names.add(m.name + s)
  }
  return names
}

export interface GrafanaVars {
  rateInterval?: string
  interval?: string
  range?: string
  datasource?: string
  /** Dashboard template variables, by name. */
  extra?: Record<string, string>
}

/** Replaces Grafana's built-in and dashboard variables so the text is plain PromQL. */
export function substituteGrafanaVars(expr: string, v: GrafanaVars = {}): string {
  const rate = v.rateInterval ?? '1m'
  const interval = v.interval ?? '15s'
  const range = v.range ?? '1h'
  const toSeconds = (d: string) => String(durationSeconds(d))
  const builtins: Record<string, string> = {
    __rate_interval: rate,
    __interval: interval,
    __interval_ms: String(durationSeconds(interval) * 1000),
    __range: range,
    __range_s: toSeconds(range),
    __range_ms: String(durationSeconds(range) * 1000),
    datasource: v.datasource ?? 'prometheus',
  }
  const re = /\$\{([a-zA-Z_]\w*)(?::\w+)?\}|\$([a-zA-Z_]\w*)|\[\[([a-zA-Z_]\w*)\]\]/g
  return expr.replace(re, (all, a, b, c) => {
    const name = a ?? b ?? c
    const value = v.extra?.[name] ?? builtins[name]
    if (value === undefined) throw new Error(`unknown Grafana variable ${all} in: ${expr}`)
    return value
  })
}

function durationSeconds(d: string): number {
  const units: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400, w: 604800 }
  let total = 0
  const re = /(\d+)(ms|s|m|h|d|w)/g
  for (const [, n, u] of d.matchAll(re)) total += Number(n) * units[u]
  if (total === 0) throw new Error(`bad duration ${d}`)
  return total
}

export interface PanelTarget {
  panel: string
  refId: string
  expr: string
}

interface Panel {
  title?: string
  panels?: Panel[]
  targets?: { expr?: string; refId?: string; hide?: boolean }[]
}

interface TemplateVar {
  name: string
  type: string
  current?: { value?: string | string[] }
  query?: string | { query?: string }
  definition?: string
}

interface Dashboard {
  panels?: Panel[]
  templating?: { list?: TemplateVar[] }
}

const readDashboard = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as Dashboard

/** Current values of the dashboard's template variables (data source variables give a uid). */
export function dashboardVariables(dashboardPath: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const v of readDashboard(dashboardPath).templating?.list ?? []) {
    const value = v.current?.value
    out[v.name] = Array.isArray(value) ? value.join('|') : (value ?? '')
  }
  return out
}

/** Every PromQL target of every panel (rows included), Grafana variables substituted. */
export function dashboardTargets(dashboardPath: string, vars: GrafanaVars = {}): PanelTarget[] {
  const extra = { ...dashboardVariables(dashboardPath), ...vars.extra }
  const out: PanelTarget[] = []
  const walk = (panels: Panel[] = []) => {
    for (const p of panels) {
      for (const t of p.targets ?? []) {
        if (typeof t.expr !== 'string' || t.expr.trim() === '') continue
        out.push({
          panel: p.title ?? '(untitled)',
          refId: t.refId ?? '?',
          expr: substituteGrafanaVars(t.expr, { ...vars, extra }),
        })
      }
      walk(p.panels)
    }
  }
  walk(readDashboard(dashboardPath).panels)
  return out
}

/**
 * The PromQL inside the dashboard's query variables: `label_values(<selector>, label)`,
 * `query_result(<expr>)`, or a bare expression. `label_values(label)` reads no metric.
 */
export function dashboardVariableExprs(dashboardPath: string): { name: string; expr: string }[] {
  const out: { name: string; expr: string }[] = []
  for (const v of readDashboard(dashboardPath).templating?.list ?? []) {
    if (v.type !== 'query') continue
    const q = (typeof v.query === 'string' ? v.query : v.query?.query) ?? v.definition ?? ''
    const lv = /^\s*label_values\((.*),\s*\w+\s*\)\s*$/s.exec(q)
    const qr = /^\s*query_result\((.*)\)\s*$/s.exec(q)
    const expr = lv ? lv[1] : qr ? qr[1] : /^\s*(label_names|metrics)\(/.test(q) ? '' : q
    if (/^\s*label_values\(\s*\w+\s*\)\s*$/.test(q) || expr.trim() === '') continue
    out.push({ name: v.name, expr: substituteGrafanaVars(expr) })
  }
  return out
}

export interface RuleExpr {
  name: string
  kind: 'alert' | 'record'
  expr: string
}

/** Every alerting and recording rule expression of a Prometheus rules file. */
export function ruleExprs(rulesPath: string): RuleExpr[] {
  const doc = parseYaml(readFileSync(rulesPath, 'utf8')) as {
    groups: { rules: { alert?: string; record?: string; expr: string }[] }[]
  }
  return doc.groups.flatMap((g) =>
    g.rules.map((r) => ({
      name: (r.alert ?? r.record) as string,
      kind: r.alert ? ('alert' as const) : ('record' as const),
      expr: String(r.expr),
    })),
  )
}

const KEYWORDS = new Set([
  'and',
  'or',
  'unless',
  'bool',
  'offset',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'atan2',
  'inf',
  'nan',
  'start',
  'end',
  // Aggregation operators: `sum by (x) (...)` puts a keyword between them and `(`.
  'sum',
  'min',
  'max',
  'avg',
  'group',
  'stddev',
  'stdvar',
  'count',
  'count_values',
  'bottomk',
  'topk',
  'quantile',
  'limitk',
  'limit_ratio',
])
const NUMBER = String.raw`0x[0-9a-fA-F]+|\d*\.?\d+(?:[eE][+-]?\d+)?(?:(?:ms|[smhdwy])(?:\d+(?:ms|[smhdwy]))*)?`
const TOKEN = new RegExp(String.raw`${NUMBER}|[a-zA-Z_:][a-zA-Z0-9_:]*|\S`, 'g')

/**
 * The metric names a PromQL expression selects. A small lexer, not a full parser: it drops
 * strings, label matchers, ranges, grouping label lists and numbers, then keeps the
 * identifiers that are not functions (followed by `(`) or keywords. `{__name__="x"}`
 * selectors count as `x`.
 */
export function metricNamesIn(expr: string): string[] {
  const names = new Set<string>()
  let s = expr.replace(/#[^\n]*/g, ' ')
  // Label matchers, remembering __name__ selectors. Strings only occur inside braces or
  // as function arguments (label_replace and friends), so drop them after braces.
  s = s.replace(/\{([^}]*)\}/g, (_all, body: string) => {
    for (const m of body.matchAll(/__name__\s*=\s*(["'`])([^"'`]*)\1/g)) names.add(m[2])
    return ' '
  })
  s = s.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, ' ')
  s = s.replace(/\[[^\]]*\]/g, ' ')
  s = s.replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' $1 ')
  const tokens = s.matchAll(TOKEN)
  const list = [...tokens].map((m) => ({ text: m[0], end: (m.index ?? 0) + m[0].length }))
  for (const { text, end } of list) {
    if (!/^[a-zA-Z_:]/.test(text)) continue
    if (KEYWORDS.has(text.toLowerCase())) continue
    if (/^\s*\(/.test(s.slice(end))) continue // a function or aggregation
    names.add(text)
  }
  return [...names]
}

/** Names in `exprs` that are neither exported, synthesized by Prometheus nor recorded. */
export function unknownMetrics(
  exprs: { expr: string; where: string }[],
  known: Set<string>,
): { where: string; name: string }[] {
  const allowed = new Set([...known, ...PROMETHEUS_SYNTHETIC])
  const bad: { where: string; name: string }[] = []
  for (const { expr, where } of exprs) {
    for (const name of metricNamesIn(expr)) if (!allowed.has(name)) bad.push({ where, name })
  }
  return bad
}
