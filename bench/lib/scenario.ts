import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { REPO_ROOT } from '../../test/helpers/node-child.ts'
import { machine } from './env.ts'
import { serverInfo } from './pg.ts'
import { type ScenarioResult, writeResult } from './report.ts'

// Shared by every scenario's entry point: run, store the JSON, print a summary, and exit
// non-zero when a correctness check failed (a missed performance target is not a failure).

export async function machineInfo(serverUrl: string | null): Promise<ScenarioResult['machine']> {
  const m: ScenarioResult['machine'] = { ...machine(), git: gitState() }
  if (serverUrl) m.postgres = await serverInfo(serverUrl).catch(() => null)
  return m
}

/** The commit measured, and how many files differed from it (a shared working tree moves). */
function gitState(): { head: string; dirtyFiles: number } | null {
  try {
    const git = (...args: string[]) => execFileSync('git', args, { cwd: REPO_ROOT }).toString()
    const head = git('rev-parse', '--short', 'HEAD').trim()
    const dirtyFiles = git('status', '--porcelain', '--untracked-files=no')
      .split('\n')
      .filter(Boolean).length
    return { head, dirtyFiles }
  } catch {
    return null
  }
}

export function isMain(metaUrl: string): boolean {
  return process.argv[1] !== undefined && fileURLToPath(metaUrl) === process.argv[1]
}

export async function runAsMain(run: () => Promise<ScenarioResult>): Promise<void> {
  try {
    const result = await run()
    const path = writeResult(result)
    for (const r of result.rows) {
      const base = r.baseline ? ` (baseline ${r.baseline.toFixed(1)}, ${r.ratio?.toFixed(1)}x)` : ''
      const met = r.met === null ? '' : r.met ? ' [met]' : ' [MISSED]'
      console.log(
        `${result.title}: ${r.measure} = ${r.value.toFixed(1)} ${r.unit}${base}; target ${r.target}${met}`,
      )
    }
    for (const c of result.checks) {
      console.log(`  check ${c.ok ? 'ok  ' : 'FAIL'} ${c.name}${c.detail ? `: ${c.detail}` : ''}`)
    }
    console.log(`wrote ${path}`)
    if (result.checks.some((c) => !c.ok)) process.exitCode = 1
  } catch (err) {
    console.error(err)
    process.exitCode = 1
  }
}
