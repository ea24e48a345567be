import { statfs } from 'node:fs/promises'
import type { PGlite } from '@electric-sql/pglite'
import { isPanic, StoreFaultError, storeFaultOf } from '../faults/errors.ts'

// Guards the embedded database against a full disk. PGlite turns a write that fails halfway
// into a PANIC, after which the next statement spins the CPU forever in its wasm loop and
// takes the whole process with it; so a PANIC marks the instance dead before any other
// statement reaches it (client.ts reopens it), and roomCheck stops writes short of the last
// megabytes so that, in the common case, no write fails halfway.

export type PgliteModule = typeof import('@electric-sql/pglite')

export interface GuardedPglite extends PGlite {
  /** The PANIC that stopped this instance; null while it works. */
  readonly panic: unknown
}

type ExecOptions = Parameters<PGlite['execProtocol']>[1]

/**
 * A PGlite class whose instances refuse every statement (a retryable StoreFaultError) once
 * one ended in a PANIC, and call `onPanic` once when it happens.
 */
export function guardPglite(
  { PGlite }: PgliteModule,
  onPanic: (err: unknown) => void,
): new (
  ...args: ConstructorParameters<PgliteModule['PGlite']>
) => GuardedPglite {
  return class Guarded extends PGlite implements GuardedPglite {
    panic: unknown = null

    override execProtocol(message: Uint8Array, options?: ExecOptions) {
      return this.guarded(() => super.execProtocol(message, options))
    }

    override execProtocolStream(message: Uint8Array, options?: ExecOptions) {
      return this.guarded(() => super.execProtocolStream(message, options))
    }

    /** Refuses once panicked; notes the PANIC a statement ends in. */
    private async guarded<T>(statement: () => Promise<T>): Promise<T> {
      if (this.panic)
        throw new StoreFaultError(
          `PGlite stopped on a PANIC (${(this.panic as Error).message}); its data directory is being opened again`,
          { cause: this.panic, reason: storeFaultOf(this.panic) ?? 'database' },
        )
      try {
        return await statement()
      } catch (err) {
        if (!this.panic && isPanic(err)) {
          this.panic = err
          onPanic(err)
        }
        throw err
      }
    }
  }
}

/**
 * A check to run before each write transaction: it throws a retryable disk_full fault while
 * fewer than `minFreeBytes` are free under `dir`, so ingestion pauses with room to spare
 * (for the WAL, a checkpoint, the reads' temporary files) instead of failing mid-write.
 */
export function roomCheck(dir: string | null, minFreeBytes: number): () => Promise<void> {
  if (!dir || minFreeBytes <= 0) return async () => {}
  return async () => {
    const free = await freeBytes(dir)
    if (free === null || free >= minFreeBytes) return
    throw new StoreFaultError(
      `only ${mb(free)} MB free under ${dir}, below the ${mb(minFreeBytes)} MB PGlite keeps (PGLITE_MIN_FREE_MB): free some space`,
      { reason: 'disk_full' },
    )
  }
}

/** Free bytes for an unprivileged writer under `dir`; null when the system cannot tell. */
export async function freeBytes(dir: string): Promise<number | null> {
  try {
    const s = await statfs(dir)
    return s.bavail * s.bsize
  } catch {
    return null
  }
}

const mb = (bytes: number) => Math.floor(bytes / (1 << 20))
