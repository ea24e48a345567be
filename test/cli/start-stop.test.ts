import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startServer } from '../../src/cli/runtime.ts'
import type { Shutdown } from '../../src/cli/shutdown.ts'
import type { Database } from '../../src/db/client.ts'
import { createTestDatabase } from '../helpers/db.ts'
import { freePort } from '../helpers/node-child.ts'
import { testRuntime } from '../helpers/restart-kit.ts'

// A stop that comes while the process is still starting: whatever start-up opens after it
// must not stay open. A Fastify app closed before or during its listen goes on listening
// (found when a SIGTERM reached `serve` before it listened: "closed everything", then
// "Server listening", and the process served on with its database closed).

describe('a stop during start-up', () => {
  let db: Database
  beforeAll(async () => {
    db = await createTestDatabase()
  })
  afterAll(async () => {
    await db.close()
  })

  const runtime = async () => testRuntime(db, { HOST: '127.0.0.1', PORT: String(await freePort()) })

  it('before the server listens: it never listens', async () => {
    const rt = await runtime()
    await rt.shutdown.close()
    const app = await startServer(rt, null, { readApi: true })
    expect(app.server.listening).toBe(false)
  })

  it('while it listens: the close waits for the listen, then the server is closed', async () => {
    const rt = await runtime()
    let stopped: Promise<void> | null = null
    // The stop starts right after the server's close is registered and listen() called
    // (a microtask runs once startServer awaits the listen), so it meets a listen under way.
    const shutdown: Shutdown = {
      add(name, close) {
        rt.shutdown.add(name, close)
        if (name === 'http server')
          queueMicrotask(() => {
            stopped = rt.shutdown.close()
          })
      },
      close: () => rt.shutdown.close(),
      get closing() {
        return rt.shutdown.closing
      },
    }
    const app = await startServer({ ...rt, shutdown }, null, { readApi: true })
    expect(stopped).not.toBeNull()
    await stopped
    expect(app.server.listening).toBe(false)
  })

  it('after it listens: closed as usual', async () => {
    const rt = await runtime()
    const app = await startServer(rt, null, { readApi: true })
    expect(app.server.listening).toBe(true)
    await rt.shutdown.close()
    expect(app.server.listening).toBe(false)
  })
})
