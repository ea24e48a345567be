import { execFile } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { DuckDBInstance } from '@duckdb/node-api'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type ServingCli, startServing, waitFor } from '../helpers/cli.ts'
import {
  boxType,
  outputDiff,
  readExamples,
  type ShellBlock,
  type SqlBlock,
} from './doc-examples.ts'

// Every shell example of README.md and docs/*.md, run against the server `npm start` is
// (the sample replayed into PGlite) with `localhost:3000` pointed at it, and every SQL recipe
// run in DuckDB against the export those examples made; outputs compared with what the docs
// show (doc-examples.ts says how). Blocks marked `server stopped` run while the server is
// down (an export of the embedded database); blocks marked `skip (reason)` do not run.

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const SAMPLE = join(ROOT, 'examples/sample.ndjson')
const FILES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
]
const EXAMPLES = FILES.flatMap((f) => readExamples(join(ROOT, f), f))
const SHELL = EXAMPLES.filter((b): b is ShellBlock => b.kind === 'sh')
const SQL = EXAMPLES.filter((b): b is SqlBlock => b.kind === 'sql')

const tmp = mkdtempSync(join(tmpdir(), 'pa-doc-examples-'))
const ENV = {
  DATA_DIR: join(tmp, 'data'),
  DATABASE_URL: '',
  SERVICE_DID: 'did:web:localhost%3A3000',
}
/** Each documentation file's examples run in a directory of their own. */
const workDir = (file: string) => {
  const dir = join(tmp, file.replace(/\W/g, '_'))
  mkdirSync(dir, { recursive: true })
  return dir
}

interface Ran {
  output: string[]
  status: number
}

/** Runs a block's commands in one shell (variables carry over), each one's output apart. */
async function runBlock(block: ShellBlock, port: number): Promise<Ran[]> {
  const npx = `npx() { if [ "$1" = prompt-appview ]; then shift; "${ROOT}bin/prompt-appview.js" "$@"; else command npx "$@"; fi; }`
  const script = [
    npx,
    ...block.commands.map(
      (c, i) =>
        `printf '\\n@@begin ${i}@@\\n'; ${c.command.replaceAll('localhost:3000', `127.0.0.1:${port}`)}\nprintf '\\n@@end ${i} %s@@\\n' "$?"`,
    ),
  ].join('\n')
  const out = await new Promise<string>((resolve) =>
    execFile(
      'bash',
      ['-c', `${script} 2>&1`],
      {
        cwd: workDir(block.file),
        env: {
          ...process.env,
          ...ENV,
          LOG_LEVEL: 'warn',
          // The examples run from a clone's root, where `require("ws")` finds the project's copy.
          NODE_PATH: join(ROOT, 'node_modules'),
          PATH: `${ROOT}node_modules/.bin:${process.env.PATH}`,
        },
        timeout: 60_000,
      },
      (_err, stdout) => resolve(stdout),
    ),
  )
  return block.commands.map((_, i) => {
    const m = new RegExp(`@@begin ${i}@@\\n([\\s\\S]*?)\\n@@end ${i} (\\d+)@@`).exec(out)
    if (!m) return { output: out.split('\n'), status: -1 }
    return { output: m[1].split('\n').filter((l) => l.trim() !== ''), status: Number(m[2]) }
  })
}

function failures(block: ShellBlock, ran: Ran[]): string[] {
  return block.commands.flatMap((c, i) => {
    const r = ran[i]
    const at = `${block.file}:${c.line}: $ ${c.command}`
    if (r.status !== 0) return [`${at}\n  exited ${r.status}:\n${r.output.join('\n')}`]
    if (c.expected.length === 0) return []
    return outputDiff(c.expected, r.output).map((d) => `${at}\n  ${d}`)
  })
}

let server: ServingCli | null = null
const stoppedRuns = new Map<ShellBlock, Ran[]>()

/** `npm start`'s server on a temporary data directory, once the replay is committed. */
async function startRun(): Promise<ServingCli> {
  const run = await startServing(['run', '--source', 'replay', '--replay-file', SAMPLE], ENV)
  // Not 'replay finished', logged once the last line is queued: a stop then drops the batch
  // still queued (its cursor was never stored), and the examples would see part of the sample.
  await waitFor('the replay to be committed', async () => run.output().includes('ingest stopped'))
  return run
}

beforeAll(async () => {
  const run = await startRun()
  const port = run.port
  run.child.kill('SIGTERM')
  await run.exited
  for (const b of SHELL.filter((x) => x.mode === 'server stopped'))
    stoppedRuns.set(b, await runBlock(b, port))
  server = await startServing(['serve'], ENV)
}, 120_000)

afterAll(async () => {
  server?.child.kill('SIGTERM')
  await server?.exited
  rmSync(tmp, { recursive: true, force: true })
})

describe('the documentation stands alone', () => {
  it('links only to files of the repository, and cites no contract section or issue', () => {
    const problems: string[] = []
    for (const file of [...FILES, 'examples/README.md']) {
      const lines = readFileSync(join(ROOT, file), 'utf8').split('\n')
      lines.forEach((text, i) => {
        for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
          if (/^(https?:|mailto:|#)/.test(target)) continue
          const path = resolve(ROOT, dirname(file), target.split('#')[0])
          if (relative(ROOT, path).startsWith('..') || !existsSync(path))
            problems.push(`${file}:${i + 1}: links to ${target}, not a file of the repository`)
        }
        if (/\bSPEC\b|\bissue \d+|#\d{3,}\b/.test(text))
          problems.push(`${file}:${i + 1}: cites a contract section, an issue or a bug number`)
      })
    }
    expect(problems).toEqual([])
  })
})

describe('the documentation examples', () => {
  it('every shell block either runs or says why not', () => {
    const silent = SHELL.filter((b) => b.mode !== 'skip' && b.commands.length === 0)
    expect(
      silent.map(
        (b) => `${b.file}:${b.line}: a shell block with no "$ command" line and no skip marker`,
      ),
    ).toEqual([])
    expect(SHELL.filter((b) => b.mode !== 'skip').length).toBeGreaterThan(5)
  })

  it('a drifted example fails, naming the file and the line', async () => {
    const block: ShellBlock = {
      kind: 'sh',
      file: 'docs/drift.md',
      line: 3,
      mode: 'server',
      reason: null,
      commands: [
        {
          line: 4,
          command: 'curl -s localhost:3000/v1/stats',
          expected: ['{"prompts":1,"renamed":{}}'],
        },
        { line: 6, command: 'echo seq 7 of 9', expected: ['seq 1 of 2'] },
        { line: 8, command: 'false', expected: [] },
      ],
    }
    const found = failures(block, await runBlock(block, server?.port ?? 0))
    // The count, renamed missing, four keys not shown, the exit status; "seq 7 of 9" matches
    // "seq 1 of 2" (numbers in lines that are not JSON are compared in shape).
    expect(found).toHaveLength(7)
    expect(found[0]).toMatch(
      /^docs\/drift\.md:4: .*\n {2}output line 1: \$\.prompts: shown 1, got 54/,
    )
    expect(found[1]).toMatch(
      /^docs\/drift\.md:4: .*\n {2}output line 1: \$\.renamed: shown, missing/,
    )
    expect(
      found.some((f) =>
        /^docs\/drift\.md:4: [\s\S]*\$\.conversations: in the output, not shown/.test(f),
      ),
    ).toBe(true)
    expect(found.at(-1)).toMatch(/^docs\/drift\.md:8: \$ false\n {2}exited 1/)
  })

  for (const block of SHELL.filter((b) => b.mode !== 'skip' && b.commands.length > 0))
    it(`${block.file}:${block.line} (${block.mode})`, async () => {
      const ran = stoppedRuns.get(block) ?? (await runBlock(block, server?.port ?? 0))
      expect(failures(block, ran)).toEqual([])
    }, 60_000)

  it('every SQL recipe runs in DuckDB on the export, with the columns it shows', async () => {
    expect(SQL.length).toBeGreaterThan(0)
    const duck = await DuckDBInstance.create(':memory:')
    const conn = await duck.connect()
    const problems: string[] = []
    try {
      for (const q of SQL) {
        const at = `${q.file}:${q.line}`
        if (q.columns.length === 0) {
          problems.push(`${at}: no result table shown after the query`)
          continue
        }
        const text = q.sql.replaceAll(`'snapshot/`, `'${workDir(q.file)}/snapshot/`)
        try {
          const r = await conn.runAndReadAll(text)
          const got = r
            .columnNames()
            .map((name, i) => ({ name, type: boxType(r.columnTypes()[i].toString()) }))
          if (JSON.stringify(got) !== JSON.stringify(q.columns))
            problems.push(`${at}: shows ${JSON.stringify(q.columns)}, got ${JSON.stringify(got)}`)
          if (r.currentRowCount === 0) problems.push(`${at}: no rows on the sample's export`)
        } catch (err) {
          problems.push(`${at}: ${(err as Error).message}`)
        }
      }
    } finally {
      conn.closeSync()
      duck.closeSync()
    }
    expect(problems).toEqual([])
  })
})
