import { existsSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { describe, expect, it } from 'vitest'
import { getJson, startServing, waitFor } from '../helpers/cli.ts'

// `demo` without DATABASE_URL: its PGlite lives in a directory of its own under the system
// temp dir (on disk, so the JS heap does not grow with the data), it indexes what its local
// Jetstream streams, and the directory goes with the process.

/** A port free a moment ago, for an option that takes a fixed one. */
async function freePort(): Promise<number> {
  const srv = createServer()
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve))
  const { port } = srv.address() as { port: number }
  await new Promise((resolve) => srv.close(resolve))
  return port
}

describe('demo command', () => {
  it('indexes into a temp-dir PGlite that is removed on SIGTERM; --jetstream-port picks its Jetstream port', async () => {
    const port = await freePort()
    const args = ['demo', '--rate', '200', '--events', '300', '--jetstream-port', String(port)]
    const demo = await startServing(args, {
      DATABASE_URL: '',
      RATE_LIMIT_PER_MINUTE: '100000',
    })
    try {
      // Logged right after the server listens.
      const line = await waitFor('the demo running line', async () =>
        demo
          .output()
          .split('\n')
          .filter((l) => l.startsWith('{"level"'))
          .map((l) => JSON.parse(l))
          .find((l) => l.msg?.startsWith('demo running')),
      )
      expect(line.dataDir.startsWith(tmpdir())).toBe(true)
      expect(existsSync(line.dataDir)).toBe(true)
      expect(line.replayWindow).toMatch(/120 s, at most 8 M characters/)
      expect(new URL(line.jetstream).port).toBe(String(port))
      await waitFor(
        'prompts indexed',
        async () => (await getJson(`${demo.url}/v1/stats`)).prompts > 0,
        120_000,
      )
      demo.child.kill('SIGTERM')
      expect(await demo.exited).toBe(0)
      expect(existsSync(line.dataDir)).toBe(false)
    } finally {
      demo.child.kill('SIGKILL')
    }
  }, 240_000)
})
