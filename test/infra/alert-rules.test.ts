// The alert rules' logic, with `promtool test rules`: synthetic series in, firing alerts
// out. The rules are infra/prometheus/alerts.yml with annotations dropped (promtool
// compares annotations verbatim; their text is not what is under test here).
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { parse as parseYaml, stringify } from 'yaml'
import { ALERTS_FILE, requireBinary } from '../helpers/prometheus.ts'

const T = { job: 'prompt-appview', instance: 'indexer:3000' }
const sel = (name: string, labels: Record<string, string> = {}) =>
  `${name}{${Object.entries({ ...T, ...labels })
    .map(([k, v]) => `${k}="${v}"`)
    .join(',')}}`
const ev = (outcome: string, values: string) => ({
  series: sel('prompt_appview_events_total', {
    source: 'jetstream',
    collection: 'xyz.quasigod.lab.letta.compiledPrompt',
    op: 'create',
    outcome,
  }),
  values,
})
const prompts = (flag: string, values: string) => ({
  series: sel('prompt_appview_prompts', { flag }),
  values,
})

type Series = { series: string; values: string }
type Check = {
  eval_time: string
  alertname: string
  exp_alerts: { exp_labels: Record<string, string> }[]
}

const firing = (alertname: string, at: string, labels: Record<string, string>): Check => ({
  eval_time: at,
  alertname,
  exp_alerts: [{ exp_labels: labels }],
})
const silent = (alertname: string, at: string): Check => ({
  eval_time: at,
  alertname,
  exp_alerts: [],
})

const cases: { name: string; input: Series[]; checks: Check[] }[] = [
  {
    name: 'lag: warning after 5m above 2m, critical after 10m above 15m',
    input: [{ series: sel('prompt_appview_ingest_lag_seconds'), values: '5x9 300x10 1200x20' }],
    checks: [
      silent('PromptAppviewIngestLagHigh', '12m'),
      firing('PromptAppviewIngestLagHigh', '15m', { ...T, severity: 'warning' }),
      silent('PromptAppviewIngestLagCritical', '28m'),
      firing('PromptAppviewIngestLagCritical', '35m', { ...T, severity: 'critical' }),
    ],
  },
  {
    name: 'repo out of sync: 10 minutes stays quiet, past 15 minutes warns, a resync clears it',
    input: [
      {
        series: sel('prompt_appview_repos_unsynchronized_oldest_seconds'),
        // Scraped each minute: a repo waiting 0..20 minutes, then resynced (0).
        values: '0+60x20 0x10',
      },
    ],
    checks: [
      silent('PromptAppviewRepoDesynchronized', '10m'),
      firing('PromptAppviewRepoDesynchronized', '18m', { ...T, severity: 'warning' }),
      silent('PromptAppviewRepoDesynchronized', '25m'),
    ],
  },
  {
    name: 'reconnect storm: one a minute fires, one every 5 minutes does not',
    input: [
      {
        series: sel('prompt_appview_source_reconnects_total', { source: 'jetstream' }),
        values: '0+1x40',
      },
      {
        series: sel('prompt_appview_source_reconnects_total', { source: 'firehose' }),
        values: '0+0.2x40',
      },
    ],
    checks: [
      firing('PromptAppviewReconnectStorm', '30m', {
        ...T,
        source: 'jetstream',
        severity: 'warning',
      }),
    ],
  },
  {
    name: 'resume gap: any increase warns',
    input: [
      {
        series: sel('prompt_appview_source_resume_gaps_total', { source: 'jetstream' }),
        values: '0x10 1x10',
      },
    ],
    checks: [
      silent('PromptAppviewResumeGap', '9m'),
      firing('PromptAppviewResumeGap', '15m', { ...T, source: 'jetstream', severity: 'warning' }),
    ],
  },
  {
    name: 'errors: 1 in 6 events fails, alert; 1 in 1000, none',
    input: [ev('error', '0+10x40'), ev('indexed', '0+50x40')],
    checks: [
      silent('PromptAppviewIngestErrors', '10m'),
      firing('PromptAppviewIngestErrors', '20m', {
        ...T,
        source: 'jetstream',
        severity: 'warning',
      }),
    ],
  },
  {
    name: 'errors: rare errors in heavy traffic stay quiet',
    input: [ev('error', '0+1x40'), ev('indexed', '0+1000x40')],
    checks: [silent('PromptAppviewIngestErrors', '30m')],
  },
  {
    name: 'orphan ratio: a jump from 0 to 1/3 fires, a steady high ratio does not',
    input: [
      prompts('orphaned', '0x60 50x100'),
      prompts('ok', '100x160'),
      prompts('staleMemory', '500x160'),
    ],
    checks: [
      silent('PromptAppviewOrphanRatioRising', '70m'), // pending (for: 15m)
      firing('PromptAppviewOrphanRatioRising', '80m', { ...T, severity: 'warning' }),
      silent('PromptAppviewOrphanRatioRising', '150m'), // still 1/3, but no longer rising
    ],
  },
  {
    name: 'orphan ratio: small orphan counts stay quiet',
    input: [prompts('orphaned', '0x60 5x60'), prompts('ok', '100x120')],
    checks: [silent('PromptAppviewOrphanRatioRising', '100m')],
  },
  {
    name: 'target down after 2m; absent target after 5m',
    input: [{ series: sel('up'), values: '1x5 0x10' }],
    checks: [
      silent('PromptAppviewTargetDown', '6m'),
      firing('PromptAppviewTargetDown', '8m', { ...T, severity: 'critical' }),
      silent('PromptAppviewTargetMissing', '10m'),
    ],
  },
  {
    name: 'no target at all',
    input: [{ series: 'unrelated_metric', values: '1x10' }],
    checks: [
      firing('PromptAppviewTargetMissing', '6m', { job: 'prompt-appview', severity: 'critical' }),
    ],
  },
]

const dir = mkdtempSync(join(tmpdir(), 'prompt-appview-rules-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function writeRules(): string {
  const doc = parseYaml(readFileSync(ALERTS_FILE, 'utf8')) as {
    groups: { rules: Record<string, unknown>[] }[]
  }
  for (const g of doc.groups) for (const r of g.rules) delete r.annotations
  const path = join(dir, 'alerts.yml')
  writeFileSync(path, stringify(doc))
  return path
}

function promtoolTest(tests: typeof cases): { ok: boolean; output: string } {
  const rules = writeRules()
  const file = join(dir, 'alerts.test.yml')
  writeFileSync(
    file,
    stringify({
      rule_files: [rules],
      evaluation_interval: '1m',
      tests: tests.map((c) => ({
        name: c.name,
        interval: '1m',
        input_series: c.input,
        alert_rule_test: c.checks,
      })),
    }),
  )
  try {
    const out = execFileSync(requireBinary('promtool'), ['test', 'rules', file], {
      encoding: 'utf8',
      stdio: 'pipe',
    })
    return { ok: true, output: out }
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string }
    return { ok: false, output: `${e.stdout ?? ''}${e.stderr ?? ''}` }
  }
}

describe('alert rules (promtool test rules)', () => {
  it('fire and stay quiet as intended', () => {
    const { ok, output } = promtoolTest(cases)
    expect(ok, output).toBe(true)
  })

  it('the harness itself fails on a wrong expectation', () => {
    const wrong = [
      {
        ...cases[0],
        checks: [firing('PromptAppviewIngestLagHigh', '3m', { ...T, severity: 'warning' })],
      },
    ]
    const { ok, output } = promtoolTest(wrong)
    expect(ok).toBe(false)
    expect(output).toMatch(/PromptAppviewIngestLagHigh/)
  })

  it('every alert in alerts.yml is exercised firing at least once', () => {
    const doc = parseYaml(readFileSync(ALERTS_FILE, 'utf8')) as {
      groups: { rules: { alert?: string }[] }[]
    }
    const alerts = doc.groups.flatMap((g) => g.rules).flatMap((r) => (r.alert ? [r.alert] : []))
    const fired = new Set(
      cases.flatMap((c) => c.checks.filter((k) => k.exp_alerts.length).map((k) => k.alertname)),
    )
    expect(alerts.filter((a) => !fired.has(a))).toEqual([])
  })
})
