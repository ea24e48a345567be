import { type ChildProcess, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { RUNTIME_NODE_FLAGS } from '../../src/cli/node-flags.ts'

// Processes under test run as their own OS process, as in production: the CLI itself
// (`prompt-appview serve`, `ingest`, `run`) or a bench helper. Memory is read from /proc,
// so it is the process's real resident set, not a heap estimate. Tests, chaos and benches
// all start their processes through here.

/**
 * Node flags for a product process: the ones it ships with (src/cli/node-flags.ts), or the
 * variable's value; `none` runs with V8's defaults.
 */
export function nodeFlagsFromEnv(name: string): string[] {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return [...RUNTIME_NODE_FLAGS]
  if (raw === 'none') return []
  return raw.split(' ').filter(Boolean)
}

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url))
export const CLI = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url))

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number }
      s.close(() => resolve(port))
    })
  })
}

export interface NodeChild {
  proc: ChildProcess
  pid: number
  /** Lines of stderr/stdout kept for error messages. */
  output: string[]
  exited: Promise<number | null>
  /** Resident set size in MB (VmRSS), or NaN once the process is gone. */
  rssMb(): number
  /** SIGTERM, then SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>
}

export function spawnNode(
  args: string[],
  env: Record<string, string>,
  opts: { execArgv?: string[]; echo?: boolean } = {},
): NodeChild {
  const proc = spawn(process.execPath, [...(opts.execArgv ?? []), ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const output: string[] = []
  const keep = (chunk: Buffer) => {
    const text = chunk.toString()
    if (opts.echo) process.stderr.write(text)
    output.push(text)
    if (output.length > 200) output.splice(0, output.length - 200)
  }
  proc.stdout?.on('data', keep)
  proc.stderr?.on('data', keep)
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)))
  return {
    proc,
    pid: proc.pid!,
    output,
    exited,
    rssMb: () => rssMbOf(proc.pid!),
    stop: async (graceMs = 10_000) => {
      if (proc.exitCode !== null || proc.signalCode !== null) return
      proc.kill('SIGTERM')
      const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs)
      await exited
      clearTimeout(timer)
    },
  }
}

export function rssMbOf(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    const kb = Number(/VmRSS:\s+(\d+)\s+kB/.exec(status)?.[1])
    return kb / 1024
  } catch {
    return Number.NaN
  }
}

/** Polls `url` until it answers 200; fails early if the child exits. */
export async function waitForHttp(url: string, child: NodeChild, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs
  let gone = false
  void child.exited.then(() => {
    gone = true
  })
  for (;;) {
    if (gone) throw new Error(`process exited before ${url} answered:\n${child.output.join('')}`)
    try {
      const res = await fetch(url)
      if (res.status === 200) return
    } catch {}
    if (Date.now() > deadline) throw new Error(`${url} did not answer within ${timeoutMs} ms`)
    await sleep(100)
  }
}
