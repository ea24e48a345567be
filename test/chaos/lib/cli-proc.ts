import { type ChildProcess, spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { RUNTIME_NODE_FLAGS, runtimeEnv } from '../../../src/cli/node-flags.ts'

// The product as an operator runs it: `src/cli/main.ts` in its own OS process with the
// heap flags it ships with, so a kill -9 or a crash is the real thing, not a test double.

const MAIN = fileURLToPath(new URL('../../../src/cli/main.ts', import.meta.url))
const LISTENING = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/
// Bounded: a process that logs for minutes must not grow the runner without limit.
const OUTPUT_CAP = 4 << 20

export interface CliProc {
  child: ChildProcess
  pid: number
  /** Whatever it wrote to stdout and stderr (the last OUTPUT_CAP characters). */
  output(): string
  /** null while it runs. */
  exit(): { code: number | null; signal: string | null } | null
  exited: Promise<{ code: number | null; signal: string | null }>
  /** The API base URL once it listens. */
  url(): string | null
  waitListening(timeoutMs?: number): Promise<string>
  kill9(): void
  /** SIGTERM and wait; SIGKILL after `graceMs`. Resolves with the exit code. */
  stop(graceMs?: number): Promise<number | null>
}

const live = new Set<CliProc>()
let logDir: string | null = null
let spawned = 0

/** Keep every product process's output in `dir` (CHAOS_LOG_DIR), one file per process. */
export function keepLogsIn(dir: string | null): void {
  logDir = dir
}

/** Every product process still running (the runner's last check before it exits). */
export function liveProcesses(): CliProc[] {
  return [...live].filter((p) => p.exit() === null)
}

export function startCli(args: string[], env: Record<string, string>): CliProc {
  const child = spawn(process.execPath, [...RUNTIME_NODE_FLAGS, MAIN, ...args], {
    // With the flags given, the entry does not restart itself, so it would not add the
    // compile cache either: it is given here, as the npm scripts give it.
    env: runtimeEnv({ ...process.env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  const keep = (d: Buffer) => {
    out += d
    if (out.length > OUTPUT_CAP) out = out.slice(-OUTPUT_CAP / 2)
  }
  child.stdout?.on('data', keep)
  child.stderr?.on('data', keep)
  let status: { code: number | null; signal: string | null } | null = null
  const logFile = logDir
    ? join(logDir, `${String(++spawned).padStart(3, '0')}-${args[0]}.log`)
    : null
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      status = { code, signal }
      if (logFile)
        writeFileSync(
          logFile,
          `${[...args].join(' ')}\n${JSON.stringify(env)}\n${out}\nexit ${describeExit(status)}\n`,
        )
      resolve(status)
    }),
  )
  let url: string | null = null
  const p: CliProc = {
    child,
    pid: child.pid ?? -1,
    output: () => out,
    exit: () => status,
    exited,
    url: () => {
      url ??= LISTENING.exec(out)?.[1] ?? null
      return url
    },
    async waitListening(timeoutMs = 120_000) {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        const u = p.url()
        if (u) return u
        if (status)
          throw new Error(`exited (${describeExit(status)}) before listening:\n${tail(out)}`)
        if (Date.now() > deadline)
          throw new Error(`did not listen in ${timeoutMs} ms:\n${tail(out)}`)
        await sleep(20)
      }
    },
    kill9: () => {
      if (!status) child.kill('SIGKILL')
    },
    async stop(graceMs = 20_000) {
      if (status) return status.code
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
      const s = await exited
      clearTimeout(timer)
      return s.code
    },
  }
  live.add(p)
  exited.then(() => live.delete(p))
  return p
}

export function describeExit(s: { code: number | null; signal: string | null }): string {
  return s.signal ? `signal ${s.signal}` : `code ${s.code}`
}

/** The last lines of a process's output, for a failure message. */
export function tail(out: string, lines = 12): string {
  return out.trimEnd().split('\n').slice(-lines).join('\n')
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
