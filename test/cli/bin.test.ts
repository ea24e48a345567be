import { execFile } from 'node:child_process'
import { accessSync, constants, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { COMMAND_NAMES } from '../../src/cli/help.ts'

// The package's bin entry: `npx prompt-appview <command>` after `npm ci`, run as a user
// would, through npm's own resolution of the project's bin and through the file itself.

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const run = promisify(execFile)
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  bin: Record<string, string>
}

const tmp = mkdtempSync(join(tmpdir(), 'pa-bin-'))
afterAll(() => rmSync(tmp, { recursive: true, force: true }))

async function outcome(file: string, args: string[], env: Record<string, string> = {}) {
  try {
    const r = await run(file, args, { cwd: ROOT, env: { ...process.env, ...env } })
    return { code: 0, out: r.stdout + r.stderr }
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string }
    return { code: e.code, out: e.stdout + e.stderr }
  }
}

// Each test runs a process of its own on a directory of its own: they run side by side.
describe.concurrent('bin/prompt-appview.js', () => {
  const bin = join(ROOT, pkg.bin['prompt-appview'])

  it('is the package bin, executable', () => {
    expect(pkg.bin).toEqual({ 'prompt-appview': 'bin/prompt-appview.js' })
    expect(() => accessSync(bin, constants.X_OK)).not.toThrow()
  })

  it('npx prompt-appview --help lists every command', async () => {
    const r = await outcome('npx', ['--no-install', 'prompt-appview', '--help'])
    expect(r.code).toBe(0)
    for (const name of COMMAND_NAMES) expect(r.out).toMatch(new RegExp(`^  ${name} `, 'm'))
  })

  it("passes the command's exit status through", async () => {
    const r = await outcome(bin, ['no-such-command'])
    expect(r.code).toBe(2)
    expect(r.out).toContain('unknown command "no-such-command"')
  })

  it('runs a command against a data directory', async () => {
    const dataDir = join(tmp, 'data')
    const r = await outcome(bin, ['migrate'], { DATA_DIR: dataDir, LOG_LEVEL: 'info' })
    expect(r.code, r.out).toBe(0)
    expect(r.out).toContain('migrations applied')
    expect(readFileSync(join(dataDir, 'pgdata', 'PG_VERSION'), 'utf8').trim()).toMatch(/^\d+$/)
  })
})
