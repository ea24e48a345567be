import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  writeSync,
} from 'node:fs'
import { join } from 'node:path'
import { DataDirLockedError } from '../faults/errors.ts'

/**
 * PGlite belongs to one process: two opening the same directory would corrupt it.
 * A lock file with our pid guards it; a lock left by a dead process is taken over.
 */
export function lockDataDir(dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true })
  const path = join(dataDir, 'prompt-appview.lock')
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx')
      writeSync(fd, String(process.pid))
      closeSync(fd)
      return () => rmSync(path, { force: true })
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      const pid = Number(readFileSync(path, 'utf8').trim())
      if (pid && isAlive(pid)) {
        throw new DataDirLockedError(
          `PGlite data directory ${dataDir} is in use by process ${pid}. PGlite belongs to one process: run serve, ingest and backfill as separate processes against Postgres (DATABASE_URL), or stop the other process.`,
        )
      }
      rmSync(path, { force: true })
    }
  }
  throw new DataDirLockedError(`could not lock PGlite data directory ${dataDir}`)
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
  return !isZombie(pid)
}

/**
 * kill(pid, 0) succeeds on a zombie (killed with -9, not reaped yet), which holds no files,
 * so its lock is dead. Only Linux's /proc/<pid>/stat can tell (state Z or X); elsewhere the
 * process counts as alive.
 */
export function isZombie(pid: number): boolean {
  let stat: string
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  } catch {
    // Without /proc (not Linux) nothing can be told; with it, the process just went away.
    return existsSync('/proc/self/stat')
  }
  // "pid (comm) state ...": comm may hold spaces and parentheses, so read after the last ')'.
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3)
  return state === 'Z' || state === 'X'
}
