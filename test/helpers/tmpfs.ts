import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, statfsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'

// A small filesystem that can be filled and grown again while a product process writes to
// it: a size-limited tmpfs (root only). Shrinking it to just above what is used is how the
// tests fill a disk at a chosen moment; growing it is how they free space.

const run = promisify(execFile)

export interface Tmpfs {
  readonly dir: string
  /** Bytes in use now. */
  used(): number
  /** Sets the size (a tmpfs never shrinks below what it holds). */
  resize(bytes: number): Promise<void>
  /**
   * Shrinks it to `headroom` bytes above what it holds now: the disk fills. The process
   * `writer` (the product) is stopped meanwhile, so the fill lands where the caller saw the
   * run, not seconds later on a loaded machine, when a short run may have ended.
   */
  fill(headroom: number, writer: number): Promise<void>
  /** Unmounts and removes the mount point. */
  destroy(): Promise<void>
}

/** Mounts a tmpfs of `bytes`; null (with the reason) where that is not possible. */
export async function mountTmpfs(bytes: number): Promise<Tmpfs | string> {
  if (process.getuid?.() !== 0) return 'not root: mounting a tmpfs needs root'
  const base = mkdtempSync(join(tmpdir(), 'pav-tmpfs-'))
  const dir = join(base, 'mnt')
  mkdirSync(dir)
  try {
    await run('mount', ['-t', 'tmpfs', '-o', `size=${bytes}`, 'tmpfs', dir])
  } catch (err) {
    rmSync(base, { recursive: true, force: true })
    return `mount -t tmpfs failed: ${(err as { stderr?: string }).stderr ?? String(err)}`.trim()
  }
  const used = () => {
    const s = statfsSync(dir)
    return (s.blocks - s.bfree) * s.bsize
  }
  const resize = async (size: number) => {
    await run('mount', ['-o', `remount,size=${Math.ceil(size / 4096) * 4096}`, dir])
  }
  return {
    dir,
    used,
    resize,
    fill: async (headroom, writer) => {
      process.kill(writer, 'SIGSTOP')
      try {
        // A statement the writer had sent may still extend Postgres's files between reading
        // the use and the remount, which makes the shrink fail (below what it holds): retry.
        for (let attempt = 1; ; attempt++) {
          try {
            return await resize(used() + headroom)
          } catch (err) {
            if (attempt === 50) throw err
          }
        }
      } finally {
        process.kill(writer, 'SIGCONT')
      }
    },
    destroy: async () => {
      await run('umount', ['-l', dir]).catch(() => {})
      rmSync(base, { recursive: true, force: true })
    },
  }
}
