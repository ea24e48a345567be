import type { AppContext } from '../context/context.ts'
import { createLimiter } from '../faults/limiter.ts'
import type { HandleVerifier } from '../model/handles.ts'
import { steadyNowMs } from '../observe/clock.ts'
import { applyBatch, type IndexerDeps } from './apply.ts'

// A repo seen for the first time has no handle until its next #identity event, which may
// never come: look it up once in the background, never slowing ingestion. Past `maxQueue`
// lookups waiting or running, the overflow is dropped (and logged); those handles arrive
// with the repo's next identity event.

export interface HandleLookupsOptions {
  concurrency?: number
  maxQueue?: number
}

/** What the lookups need of the process's dependency bag (AppContext). */
type HandleLookupsDeps = IndexerDeps & Pick<AppContext, 'logger'>

export class HandleLookups {
  readonly #ctx: HandleLookupsDeps
  readonly #verify: HandleVerifier
  readonly #limit: ReturnType<typeof createLimiter>
  readonly #maxQueue: number
  /** Lookups waiting or running. */
  #pending = 0
  #dropped = 0
  #stopped = false
  #idle: Array<() => void> = []

  constructor(ctx: HandleLookupsDeps, verify: HandleVerifier, opts: HandleLookupsOptions = {}) {
    this.#ctx = ctx
    this.#verify = verify
    this.#limit = createLimiter(opts.concurrency ?? 4)
    this.#maxQueue = opts.maxQueue ?? 10_000
  }

  enqueue(dids: string[]): void {
    if (this.#stopped) return
    for (const did of dids) {
      if (this.#pending >= this.#maxQueue) {
        if (this.#dropped++ % 1000 === 0)
          this.#ctx.logger.warn({ dropped: this.#dropped }, 'handle lookup queue full')
        continue
      }
      this.#pending++
      void this.#limit(() => this.#lookup(did)).finally(() => {
        if (--this.#pending === 0) for (const done of this.#idle.splice(0)) done()
      })
    }
  }

  /** Resolves once no lookup is queued or running. */
  async idle(): Promise<void> {
    if (this.#pending === 0) return
    await new Promise<void>((resolve) => this.#idle.push(resolve))
  }

  /** Drops what is queued and waits for the lookups in flight. */
  async stop(): Promise<void> {
    this.#stopped = true
    await this.idle()
  }

  async #lookup(did: string): Promise<void> {
    if (this.#stopped) return
    try {
      const handle = await this.#verify(did, null)
      if (handle === null || this.#stopped) return
      // Applied like an #identity event, timed now: an older upstream event cannot undo it.
      await applyBatch(
        this.#ctx,
        [{ kind: 'identity', did, handle, seq: null, timeUs: steadyNowMs() * 1000 }],
        null,
      )
    } catch (err) {
      this.#ctx.logger.warn({ err, did }, 'handle lookup failed')
    }
  }
}
