import { LRUCache } from 'lru-cache'
import type { Logger } from 'pino'
import type { ChainHead } from '../../../db/repo-chain.ts'
import type { ChainEvent } from '../../../model/events.ts'

// Each tracked repo's chain ahead of the database, in two LRU layers: `heads` as checked on
// this connection (dropped on connect: unhanded frames are read again), `pushed` as handed on.

/** Tracked DIDs kept in memory by default (~20 MB): also what the runtime loads of them. */
export const MAX_TRACKED = 200_000

export interface ChainTrackerOptions {
  loadHead: (did: string) => Promise<ChainHead | null>
  logger: Logger
  /** Past it a new repo is not tracked: its next wanted commit costs a resync, loses nothing. */
  maxTracked?: number
  /** Heads per layer (default 50,000). */
  maxHeads?: number
}

export class ChainTracker {
  readonly #opts: Required<ChainTrackerOptions>
  readonly #tracked = new Set<string>()
  readonly #heads: LRUCache<string, ChainHead>
  readonly #pushed: LRUCache<string, ChainHead>
  readonly #tails = new Map<string, Promise<unknown>>()
  #full = false

  constructor(opts: ChainTrackerOptions) {
    this.#opts = { maxTracked: MAX_TRACKED, maxHeads: 50_000, ...opts }
    this.#heads = new LRUCache({ max: this.#opts.maxHeads })
    this.#pushed = new LRUCache({ max: this.#opts.maxHeads })
  }

  isTracked(did: string): boolean {
    return this.#tracked.has(did)
  }

  track(did: string): void {
    if (this.#tracked.has(did)) return
    if (this.#tracked.size >= this.#opts.maxTracked) {
      if (!this.#full)
        this.#opts.logger.warn(
          { maxTracked: this.#opts.maxTracked },
          'tracked-repo set is full: further new repos are verified only on wanted commits',
        )
      this.#full = true
      return
    }
    this.#tracked.add(did)
  }

  get trackedCount(): number {
    return this.#tracked.size
  }

  /** A new connection: frames not handed on will be read again, so forget what they said. */
  resetConnection(): void {
    this.#heads.clear()
  }

  async head(did: string): Promise<ChainHead | null> {
    const h = this.#heads.get(did) ?? this.#pushed.get(did)
    if (h) return h
    return this.#opts.loadHead(did)
  }

  /** The state as of the items handed on; undefined when none of them named the repo. */
  pushedState(did: string): ChainHead['state'] | undefined {
    return this.#pushed.get(did)?.state
  }

  /** The state after a checked frame of the current connection. */
  setHead(head: ChainHead): void {
    this.#heads.set(head.did, head)
  }

  /** An item carrying this chain state was handed to the pipeline. */
  pushed(ev: ChainEvent): void {
    this.#pushed.set(ev.did, headOf(ev, this.#pushed.get(ev.did)))
  }

  /** A resync's state, at once in both layers: later frames continue from it. */
  settle(ev: ChainEvent): void {
    const head = headOf(ev, this.#pushed.get(ev.did))
    this.#pushed.set(ev.did, head)
    this.#heads.set(ev.did, head)
  }

  /** Runs `task` after every earlier task of the same repo: one repo's frames stay in order. */
  serialize<T>(did: string, task: () => Promise<T>): Promise<T> {
    const prev = this.#tails.get(did) ?? Promise.resolve()
    const run = prev.then(task, task)
    const tail = run.catch(() => {})
    this.#tails.set(did, tail)
    void tail.then(() => {
      if (this.#tails.get(did) === tail) this.#tails.delete(did)
    })
    return run
  }
}

function headOf(ev: ChainEvent, prev: ChainHead | undefined): ChainHead {
  return {
    did: ev.did,
    rev: ev.rev ?? prev?.rev ?? null,
    data: ev.data ?? prev?.data ?? null,
    state: ev.state,
  }
}
