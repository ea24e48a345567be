import { type ChildProcess, spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { fileURLToPath } from 'node:url'
import { createGenerator, type GeneratorInput } from '../../src/demo/generator.ts'

const MAIN = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url))

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number }
      srv.close(() => resolve(port))
    })
  })
}

export interface CliProcess {
  child: ChildProcess
  port: number
  url: string
  output: () => string
  exited: Promise<number | null>
}

/** Starts `prompt-appview <args>` as its own process, on a free port, logging to a buffer. */
export async function startCli(args: string[], env: Record<string, string>): Promise<CliProcess> {
  const port = await freePort()
  let out = ''
  const child = spawn(process.execPath, [MAIN, ...args], {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
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
  return { child, port, url: `http://127.0.0.1:${port}`, output: () => out, exited }
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
