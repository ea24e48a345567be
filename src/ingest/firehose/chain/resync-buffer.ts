import type { Logger } from 'pino'
import type { CommitBody } from '../signature.ts'

// Commits of a repo awaiting its resync, held (bounded) and judged again once it settles, so
// an active repo does not resync over and over; a repo over a bound loses its buffer and holds
// no more until then (its next commit breaks the chain and asks for another resync).

export interface HeldCommit {
  body: CommitBody
  timeUs: number
}

export interface ResyncBufferOptions {
  logger: Logger
  perRepo?: number
  maxBytes?: number
  maxRepos?: number
}

export class ResyncBuffer {
  readonly #o: Required<ResyncBufferOptions>
  readonly #held = new Map<string, HeldCommit[]>()
  readonly #overflowed = new Set<string>()
  #bytes = 0

  constructor(o: ResyncBufferOptions) {
    this.#o = { perRepo: 256, maxBytes: 32 * 1024 * 1024, maxRepos: 1_000, ...o }
  }

  get bytes(): number {
    return this.#bytes
  }

  /** Keeps a commit of a waiting repo; false when a bound refused it. */
  hold(body: CommitBody, timeUs: number): boolean {
    const did = body.repo
    if (this.#overflowed.has(did)) return false
    const list = this.#held.get(did) ?? []
    const size = sizeOf(body)
    const over =
      list.length >= this.#o.perRepo ||
      this.#bytes + size > this.#o.maxBytes ||
      (list.length === 0 && this.#held.size >= this.#o.maxRepos)
    if (over) {
      this.drop(did)
      if (this.#overflowed.size < this.#o.maxRepos) this.#overflowed.add(did)
      this.#o.logger.warn(
        { did, held: list.length },
        'resync buffer full for this repo: its commits are dropped until it resyncs',
      )
      return false
    }
    list.push({ body, timeUs })
    this.#held.set(did, list)
    this.#bytes += size
    return true
  }

  /** The repo's held commits, in arrival order, and forgets them. */
  take(did: string): HeldCommit[] {
    const list = this.#held.get(did) ?? []
    this.drop(did)
    this.#overflowed.delete(did)
    return list
  }

  drop(did: string): void {
    const list = this.#held.get(did)
    if (!list) return
    for (const h of list) this.#bytes -= sizeOf(h.body)
    this.#held.delete(did)
  }
}

function sizeOf(body: CommitBody): number {
  return (body.blocks?.byteLength ?? 0) + 512 * body.ops.length + 512
}
