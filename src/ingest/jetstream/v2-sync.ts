import type { RepoPruneEvent } from '../../model/events.ts'
import type { FrameVerdict } from '../ws-source.ts'

// `#sync(did, rev R)` on Jetstream v2 (notes/jetstream-v2.md section 5): the repo's records
// are re-sent as creates at R, and when the window ends (the DID's first other event, stream
// time or the monotonic clock gone quiet) a `prune` tombstones those older than R. The stored
// cursor stays before an open window's `#sync`, so a crash replays it instead of losing deletes.

interface Window {
  rev: string
  seq: number
  lastUs: number
}

export interface SyncFrameInfo {
  did: string
  seq: number
  timeUs: number
  /** For commits: the op and rev; null for other kinds. */
  commit: { op: string; rev: string } | null
}

export class SyncWindows {
  readonly #open = new Map<string, Window>()
  readonly #quietUs: number
  readonly #maxOpen: number
  #newestUs = 0

  constructor(opts: { quietSeconds: number; maxOpen: number }) {
    this.#quietUs = Math.round(opts.quietSeconds * 1e6)
    this.#maxOpen = opts.maxOpen
  }

  get size(): number {
    return this.#open.size
  }

  /** Windows an incoming frame ends (its own DID's, and any gone quiet): prune them first. */
  closeBefore(f: SyncFrameInfo | { timeUs: number }): RepoPruneEvent[] {
    const out: RepoPruneEvent[] = []
    this.#newestUs = Math.max(this.#newestUs, f.timeUs)
    if ('did' in f) {
      const w = this.#open.get(f.did)
      const continues = w && f.commit?.op === 'create' && f.commit.rev === w.rev
      // Stream time, not the frame's: `time` is a display time an operator import can rewrite.
      if (w && continues) w.lastUs = this.#newestUs
      else if (w) out.push(this.#close(f.did, w))
    }
    for (const [did, w] of this.#open) {
      if (this.#newestUs - w.lastUs > this.#quietUs) out.push(this.#close(did, w))
    }
    return out
  }

  /** A `#sync` opens a window (after `closeBefore` ended the DID's previous one). */
  open(did: string, rev: string, seq: number, timeUs: number): RepoPruneEvent[] {
    this.#open.set(did, { rev, seq, lastUs: Math.max(this.#newestUs, timeUs) })
    const out: RepoPruneEvent[] = []
    // Bounded: past the limit the oldest window ends early (its later creates still apply).
    while (this.#open.size > this.#maxOpen) {
      const [oldDid, w] = this.#open.entries().next().value as [string, Window]
      out.push(this.#close(oldDid, w))
    }
    return out
  }

  /** The stream went quiet: every open window ends (its creates have all been handled). */
  closeAll(): RepoPruneEvent[] {
    return [...this.#open].map(([did, w]) => this.#close(did, w))
  }

  /** The cursor that is safe to store after `seq`: just before the oldest open `#sync`. */
  safeCursor(seq: number): number {
    let safe = seq
    for (const w of this.#open.values()) safe = Math.min(safe, w.seq - 1)
    return safe
  }

  #close(did: string, w: Window): RepoPruneEvent {
    this.#open.delete(did)
    return { kind: 'prune', did, rev: w.rev, timeUs: w.lastUs }
  }
}

export interface QuietWatch {
  /** The session's message handler, taking turns with the quiet close. */
  onMessage(data: Buffer, binary: boolean): Promise<FrameVerdict>
  /** Stops the clock and waits for a close under way. */
  stop(): Promise<void>
}

/**
 * Runs `closeQuiet`, taking turns with the messages, once none arrived or was handled for
 * `quietMs` while a window is open; a failed close fails the next message, ending the session.
 */
export function watchQuiet(o: {
  handle: (data: Buffer, binary: boolean) => Promise<FrameVerdict>
  closeQuiet: () => Promise<boolean>
  windows: SyncWindows
  quietMs: number
}): QuietWatch {
  let turn: Promise<unknown> = Promise.resolve()
  let busy = 0
  let lastActivity = performance.now()
  let failure: unknown = null
  const inTurn = <T>(fn: () => Promise<T>): Promise<T> => {
    busy++
    const run = turn.then(fn).finally(() => {
      busy--
      lastActivity = performance.now()
    })
    turn = run.catch(() => {}) // the next turn waits; `run`'s own caller sees its failure
    return run
  }
  const timer = setInterval(
    () => {
      if (busy > 0 || o.windows.size === 0 || performance.now() - lastActivity < o.quietMs) return
      inTurn(o.closeQuiet).catch((err) => {
        failure = err
      })
    },
    Math.max(50, Math.min(1000, o.quietMs / 4)),
  )
  return {
    onMessage: (data, binary) => {
      lastActivity = performance.now()
      return inTurn(async () => {
        if (failure !== null) throw failure
        return o.handle(data, binary)
      })
    },
    stop: async () => {
      clearInterval(timer)
      await turn
    },
  }
}
