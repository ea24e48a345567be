import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { openDatabase } from '../../src/db/client.ts'
import { getJson, startCli, startServing, waitFor } from '../helpers/cli.ts'

const dir = mkdtempSync(join(tmpdir(), 'pav-serve-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('migrations and readiness', () => {
  it('isMigrated follows migrate', async () => {
    const db = await openDatabase({ url: null, dataDir: null })
    expect(await db.isMigrated()).toBe(false)
    await db.migrate()
    expect(await db.isMigrated()).toBe(true)
    await db.close()
  })

  it('`serve` never migrates: not ready on an empty store, ready after `migrate`', async () => {
    const env = { DATA_DIR: join(dir, 'store'), DATABASE_URL: '' }
    const serve = await startServing(['serve'], env)
    await waitFor('the server', async () => (await fetch(`${serve.url}/healthz`)).ok)
    expect((await fetch(`${serve.url}/readyz`)).status).toBe(503)
    serve.child.kill('SIGTERM')
    expect(await serve.exited).toBe(0)

    const migrate = startCli(['migrate'], env)
    expect(await migrate.exited).toBe(0)
    const again = await startServing(['serve'], env)
    await waitFor('readiness', async () => (await fetch(`${again.url}/readyz`)).status === 200)
    expect((await getJson(`${again.url}/v1/stats`)).prompts).toBe(0)
    again.child.kill('SIGTERM')
    expect(await again.exited).toBe(0)
  }, 240_000)
})
