import { type ChildProcess, fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { FeederReady, FeederRequest } from './feeder-child.ts'

export interface Feeder extends FeederReady {
  close(): Promise<void>
}

const CHILD = fileURLToPath(new URL('./feeder-child.ts', import.meta.url))

/** Starts a local Jetstream loaded with `req.events` generated events in a child process. */
export async function startFeeder(req: FeederRequest): Promise<Feeder> {
  const child: ChildProcess = fork(CHILD, [], {
    execArgv: ['--max-old-space-size=16384'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const ready = await new Promise<FeederReady>((resolve, reject) => {
    child.once('error', reject)
    child.once('exit', (code) => reject(new Error(`feeder exited early (${code})`)))
    child.on('message', (m: FeederReady) => {
      if (m.type === 'ready') resolve(m)
    })
    child.send({ type: 'start', request: req })
  })
  child.removeAllListeners('exit')
  return {
    ...ready,
    close: async () => {
      if (child.exitCode !== null) return
      const exited = new Promise<void>((r) => child.once('exit', () => r()))
      child.send({ type: 'close' })
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
      await exited
      clearTimeout(timer)
    },
  }
}
