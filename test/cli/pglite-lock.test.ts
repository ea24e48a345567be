import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { openDatabase } from '../../src/db/client.ts'
import { isZombie } from '../../src/db/data-dir-lock.ts'
import { DataDirLockedError } from '../../src/faults/errors.ts'

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

describe('PGlite lock of a process that is gone', () => {
  // `exec sleep 30` replaces the shell with a program that never reaps children, so the
  // background `sleep 1` stays a zombie when it exits (as a kill -9'd indexer under a shell
  // or a supervisor that has not waited yet) while its parent lives. It lives a second so
  // that it exits after the exec: a child that exited before it (`sleep 0`) could be reaped
  // by bash itself, under load, and never be a zombie at all.
  async function zombie(): Promise<{ zombiePid: number; parent: ChildProcess }> {
    const parent = spawn('bash', ['-c', 'sleep 1 & echo $!; exec sleep 30'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    const zombiePid = await new Promise<number>((resolve) =>
      parent.stdout.once('data', (d) => resolve(Number(String(d).trim()))),
    )
    const deadline = Date.now() + 10_000
    // isZombie also says yes for a process that is gone: wait for the zombie itself.
    const state = () => /\) (\S) /.exec(readFileSync(`/proc/${zombiePid}/stat`, 'utf8'))?.[1]
    while (state() !== 'Z') {
      if (Date.now() > deadline) throw new Error(`process ${zombiePid} did not become a zombie`)
      await new Promise((r) => setTimeout(r, 20))
    }
    return { zombiePid, parent }
  }

  it('takes over the lock of a zombie, and still refuses a live process', async () => {
    const { zombiePid, parent } = await zombie()
    try {
      expect(readFileSync(`/proc/${zombiePid}/stat`, 'utf8')).toMatch(/\) Z /)
      expect(isZombie(zombiePid)).toBe(true)
      const zdir = mkdtempSync(join(tmpdir(), 'pav-lock-zombie-'))
      writeFileSync(join(zdir, 'prompt-appview.lock'), String(zombiePid))
      const db = await openDatabase({ url: null, dataDir: zdir })
      expect(await db.ping()).toBe(true)
      expect(readFileSync(join(zdir, 'prompt-appview.lock'), 'utf8')).toBe(String(process.pid))
      await db.close()

      // The zombie's parent is alive: its lock is respected.
      writeFileSync(join(zdir, 'prompt-appview.lock'), String(parent.pid))
      await expect(openDatabase({ url: null, dataDir: zdir })).rejects.toThrow(
        new RegExp(`in use by process ${parent.pid}`),
      )
      rmSync(zdir, { recursive: true, force: true })
    } finally {
      parent.kill('SIGKILL')
    }
  })
})
