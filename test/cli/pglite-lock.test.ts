import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { openDatabase } from '../../src/db/client.ts'
import { DataDirLockedError } from '../../src/errors.ts'

const dir = mkdtempSync(join(tmpdir(), 'pav-lock-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('PGlite data directory', () => {
  it('a second opener gets a clear error, and the lock goes with the first', async () => {
    const first = await openDatabase({ url: null, dataDir: dir })
    await first.migrate()
    await expect(openDatabase({ url: null, dataDir: dir })).rejects.toBeInstanceOf(
      DataDirLockedError,
    )
    await expect(openDatabase({ url: null, dataDir: dir })).rejects.toThrow(
      /in use by process \d+.*DATABASE_URL/,
    )
    await first.close()
    const again = await openDatabase({ url: null, dataDir: dir })
    expect(await again.ping()).toBe(true)
    await again.close()
  })
})
