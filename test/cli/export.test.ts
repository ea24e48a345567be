import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { getJson, startCli, startServing, waitFor } from '../helpers/cli.ts'

// `prompt-appview export` as a person runs it: the sample replay indexed into a PGlite data
// directory by `run`, stopped, then exported from that directory; the manifest's counts are
// what /v1/stats said. Bad options and an unreachable database are clear messages with no
// manifest written. While a server holds the directory, export says which commands work.

const dir = mkdtempSync(join(tmpdir(), 'pav-export-cli-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const SAMPLE = fileURLToPath(new URL('../../examples/sample.ndjson', import.meta.url))
const DATA = { DATA_DIR: join(dir, 'data'), DATABASE_URL: '' }

describe('prompt-appview export', () => {
  it('writes the snapshot of a data directory `run` filled, counts as /v1/stats said', async () => {
    const run = await startServing(['run', '--source', 'replay', '--replay-file', SAMPLE], DATA)
    let stats: { prompts: number; conversations: number; agents: number }
    try {
      await waitFor('the replay to finish', async () => run.output().includes('replay finished'))
      // Stable across two reads: the pipeline has written what the replay read.
      stats = await waitFor('the index to settle', async () => {
        const counts = async () => {
          const { prompts, conversations, agents } = await getJson(`${run.url}/v1/stats`)
          return { prompts, conversations, agents }
        }
        const a = await counts()
        await new Promise((r) => setTimeout(r, 500))
        const b = await counts()
        return a.prompts > 0 && JSON.stringify(a) === JSON.stringify(b) && b
      })
      // While the server holds the directory, export names the commands that work instead.
      const held = startCli(['export', '--out', join(dir, 'held'), '--format', 'ndjson'], {
        ...DATA,
        PORT: String(run.port),
      })
      expect(await held.exited).toBe(1)
      expect(held.output()).toContain(`in use by process ${run.child.pid}`)
      const curl = new RegExp(
        `curl -fsS -o \\S+/prompts\\.ndjson (${run.url}/v1/export/prompts\\.ndjson)`,
      )
      const url = curl.exec(held.output())?.[1]
      expect(url, held.output()).toBeDefined()
      const res = await fetch(url as string)
      expect(res.status).toBe(200)
      expect(res.headers.get('x-snapshot-seq')).toMatch(/^\d+$/)
      expect((await res.text()).trim().split('\n').length).toBe(stats.prompts)
      run.child.kill('SIGTERM')
      expect(await run.exited, run.output()).toBe(0)
    } finally {
      run.child.kill('SIGKILL')
    }
    const out = join(dir, 'out')
    const exp = startCli(['export', '--out', out, '--format', 'ndjson', '--revisions'], DATA)
    expect(await exp.exited, exp.output()).toBe(0)
    const manifest = JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8'))
    expect(manifest.counts).toMatchObject({
      prompts: stats.prompts,
      conversations: stats.conversations,
      agents: stats.agents,
    })
    expect(manifest.counts.revisions).toBeGreaterThanOrEqual(stats.prompts)
    expect(readdirSync(out).sort()).toEqual([
      'agents.ndjson',
      'conversations.ndjson',
      'manifest.json',
      'prompt_flags.ndjson',
      'prompts.ndjson',
      'revisions.ndjson',
    ])
    const lines = readFileSync(join(out, 'prompts.ndjson'), 'utf8').trim().split('\n')
    expect(lines.length).toBe(stats.prompts)
    expect(manifest.schemaVersion).toBe(2)
    // Every prompt has at least one prompt_flags row (`ok` for none).
    const flagged = readFileSync(join(out, 'prompt_flags.ndjson'), 'utf8').trim().split('\n')
    const uris = new Set(flagged.map((l) => JSON.parse(l).uri))
    expect(uris.size).toBe(stats.prompts)
    expect(exp.output()).toMatch(/"msg":"export: done"/)
  }, 180_000)

  it('bad options and an unreachable database: a clear message, no manifest', async () => {
    const cases: Array<{ args: string[]; env?: Record<string, string>; says: RegExp }> = [
      { args: ['export'], says: /--out DIR is required/ },
      {
        args: ['export', '--out', join(dir, 'x'), '--format', 'csv'],
        says: /must be parquet or ndjson/,
      },
      {
        args: ['export', '--out', join(dir, 'down')],
        env: { DATABASE_URL: 'postgres://postgres@127.0.0.1:9/none' },
        says: /ECONNREFUSED|connect/,
      },
    ]
    for (const c of cases) {
      const p = startCli(c.args, { ...DATA, LOG_LEVEL: 'error', ...c.env })
      expect(await p.exited, c.args.join(' ')).toBe(1)
      expect(p.output()).toMatch(c.says)
    }
    expect(existsSync(join(dir, 'down', 'manifest.json'))).toBe(false)
  }, 120_000)
})
