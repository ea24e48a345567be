import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { afterAll, describe, expect, it } from 'vitest'
import { openDatabase } from '../../src/db/client.ts'
import { getJson, startCli, startServing, waitFor } from '../helpers/cli.ts'
import { usingPostgres } from '../helpers/db.ts'

const dir = mkdtempSync(join(tmpdir(), 'pav-serve-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

// The readiness check asks whether every migration of drizzle/ is applied; `serve` never
// migrates. On Postgres an empty database shows it. A new embedded store comes from the
// template, migrated (src/db/pglite-template.ts), so there `serve` is ready at once.
async function emptyPostgresDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const server = process.env.TEST_DATABASE_URL as string
  const name = `pav_serve_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
  const admin = postgres(server, { max: 1, onnotice: () => {} })
  await admin.unsafe(`CREATE DATABASE ${name}`)
  const url = new URL(server)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    drop: async () => {
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await admin.end()
    },
  }
}

describe('migrations and readiness', () => {
  it('a new embedded store is migrated from the start', async () => {
    const db = await openDatabase({ url: null, dataDir: null })
    expect(await db.isMigrated()).toBe(true)
    await db.close()
  })

  it.skipIf(!usingPostgres())(
    'isMigrated follows migrate (an empty Postgres database)',
    async () => {
      const empty = await emptyPostgresDatabase()
      try {
        const db = await openDatabase({ url: empty.url, dataDir: null, maxConnections: 1 })
        expect(await db.isMigrated()).toBe(false)
        await db.migrate()
        expect(await db.isMigrated()).toBe(true)
        await db.close()
      } finally {
        await empty.drop()
      }
    },
  )

  it.skipIf(!usingPostgres())(
    '`serve` never migrates: not ready on an empty database, ready after `migrate`',
    async () => {
      const empty = await emptyPostgresDatabase()
      try {
        const env = { DATABASE_URL: empty.url }
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
      } finally {
        await empty.drop()
      }
    },
    240_000,
  )

  it('`serve` on a new embedded store is ready at once, and empty', async () => {
    const serve = await startServing(['serve'], { DATA_DIR: join(dir, 'store'), DATABASE_URL: '' })
    await waitFor('readiness', async () => (await fetch(`${serve.url}/readyz`)).status === 200)
    expect((await getJson(`${serve.url}/v1/stats`)).prompts).toBe(0)
    serve.child.kill('SIGTERM')
    expect(await serve.exited).toBe(0)
  }, 240_000)
})
