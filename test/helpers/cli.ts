import { type ChildProcess, spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { createGenerator, type GeneratorInput } from '../../demo-network/generator.ts'

const MAIN = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url))

export interface CliProcess {
  child: ChildProcess
  output: () => string
  exited: Promise<number | null>
}

export interface ServingCli extends CliProcess {
  port: number
  url: string
}

/** Starts `prompt-appview <args>` as its own process, logging to a buffer. */
export function startCli(args: string[], env: Record<string, string>): CliProcess {
  let out = ''
  const child = spawn(process.execPath, [MAIN, ...args], {
    env: { ...process.env, HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  child.stdout?.on('data', (d) => {
    out += d
  })
  child.stderr?.on('data', (d) => {
    out += d
  })
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  )
  return { child, output: () => out, exited }
}

const LISTENING = /Server listening at (http:\/\/127\.0\.0\.1:(\d+))/

/**
 * Starts a command that serves HTTP on a port the OS picks (PORT=0: no window in which
 * another process can take a port chosen in advance) and resolves once it listens, with
 * its address read from the log. A process that exits first fails with its output.
 */
export async function startServing(
  args: string[],
  env: Record<string, string>,
  timeoutMs = 120_000,
): Promise<ServingCli> {
  // Fastify logs the address at info; a quieter level would hide it.
  const p = startCli(args, { ...env, PORT: '0', LOG_LEVEL: 'info' })
  const deadline = Date.now() + timeoutMs
  let exitCode: number | null | undefined
  p.exited.then((code) => {
    exitCode = code
  })
  for (;;) {
    const m = LISTENING.exec(p.output())
    if (m) return { ...p, url: m[1], port: Number(m[2]) }
    if (exitCode !== undefined)
      throw new Error(`prompt-appview ${args.join(' ')} exited (${exitCode}):\n${p.output()}`)
    if (Date.now() > deadline) {
      p.child.kill('SIGKILL')
      throw new Error(`prompt-appview ${args.join(' ')} did not listen in time:\n${p.output()}`)
    }
    await new Promise((r) => setTimeout(r, 50))
  }
}

export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined | null | false>,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let lastErr: unknown
  while (Date.now() < deadline) {
    try {
      const v = await fn()
      if (v) return v
    } catch (err) {
      lastErr = err
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`timed out waiting for ${what}${lastErr ? `: ${String(lastErr)}` : ''}`)
}

export async function getJson(url: string): Promise<any> {
  const res = await fetch(url)
  if (!res.ok) throw new Error(`${url}: ${res.status}`)
  return res.json()
}

/** Writes `n` generated Jetstream events to `file`; returns the last time_us. */
export function writeReplayFile(file: string, n: number, opts: GeneratorInput = {}): number {
  const gen = createGenerator({
    seed: 7,
    dids: 20,
    contentBytes: { min: 1024, max: 4096 },
    ...opts,
  })
  const lines: string[] = []
  let last = 0
  for (let i = 0; i < n; i++) {
    const e = gen.next()
    last = e.time_us
    lines.push(JSON.stringify(e))
  }
  writeFileSync(file, `${lines.join('\n')}\n`)
  return last
}
