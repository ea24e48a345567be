import type { AppContext } from '../context/context.ts'
import type { SourceCursor } from '../model/cursor.ts'
import type { CursorPosition, Sink, SourceItem } from '../model/events.ts'
import type { Provenance } from '../model/rows.ts'
import type { BatchResult, IndexerDeps } from './apply.ts'
import { applyWithRetry } from './apply-retry.ts'
import type { BatchEvent } from './plan.ts'
import { prepareEvent } from './prepare.ts'

// Between a source and the database: a bounded queue (a full one makes the source wait, so
// memory stays bounded) and batches applied in one transaction each with the cursor they
// reach. Frames with nothing to index move the cursor only every cursorIntervalMs, so a quiet
// stretch costs one small write a second instead of one per frame.

export interface PipelineOptions {
  source: string
  key: string
  /** Stamped, unverified, on commits that carry no provenance of their own (Source.provenance). */
  provenance: Provenance['source']
  batchSize: number
  batchDelayMs: number
  queueSize: number
  /** Input bytes buffered before the reader pauses (records vary from 1 KB to 200 KB). */
  queueBytes?: number
  /** Input bytes per transaction, on top of batchSize: a batch of large prompts stays small. */
  batchBytes?: number
  cursorIntervalMs?: number
  /** Ingest only DIDs of this hash partition. */
  partition?: { index: number; count: number } | null
  /** Called after each commit with the repos it indexed for the first time. */
  onNewDids?: ((dids: string[]) => void) | null
}

/** What the pipeline needs of the process's dependency bag (AppContext). */
type PipelineDeps = IndexerDeps & Pick<AppContext, 'logger' | 'metrics'>

/** A queued item: a prompt write carries its analysis beside it (plan.ts, PreparedCommit). */
type Queued = Omit<SourceItem, 'event'> & { event: BatchEvent | null }

export class IngestPipeline implements Sink {
  readonly #ctx: PipelineDeps
  readonly #opts: Required<PipelineOptions>
  #queue: Queued[] = []
  #queuedBytes = 0
  #wakeWriter: (() => void) | null = null
  #wakeReaders: Array<() => void> = []
  #stopping = false
  #drain = true
  #pendingCursor: CursorPosition | null = null
  #lastCursorWrite = Number.NEGATIVE_INFINITY
  #newestUs: number | null = null
  #reached: SourceCursor | null = null
  #committed = 0

  constructor(ctx: PipelineDeps, opts: PipelineOptions) {
    this.#ctx = ctx
    this.#opts = {
      cursorIntervalMs: 1000,
      queueBytes: 16 << 20,
      batchBytes: 8 << 20,
      partition: null,
      onNewDids: null,
      ...opts,
    }
  }

  /** Source time (µs) of the newest event processed, of any kind. */
  get newestEventUs(): number | null {
    return this.#newestUs
  }

  get committedEvents(): number {
    return this.#committed
  }

  async push(item: SourceItem): Promise<void> {
    while (this.#isFull() && !this.#stopping) {
      await new Promise<void>((resolve) => this.#wakeReaders.push(resolve))
    }
    if (this.#stopping && !this.#drain) return
    const part = this.#opts.partition
    if (part && item.event && didPartition(item.event.did, part.count) !== part.index) {
      item = { ...item, event: null }
    }
    const ev = item.event
    // Sources that cannot vouch for a record (Jetstream, replay files) say nothing about it.
    if (ev?.kind === 'commit' && !ev.provenance) {
      const provenance = { source: this.#opts.provenance, verified: false, commit: null }
      item = { ...item, event: { ...ev, provenance } }
    }
    // Analyzed now, while the batch before this one is in its transaction.
    this.#queue.push({ ...item, event: item.event && prepareEvent(this.#ctx, item.event) })
    this.#queuedBytes += item.bytes ?? 0
    this.#wakeWriter?.()
  }

  #isFull(): boolean {
    return this.#queue.length >= this.#opts.queueSize || this.#queuedBytes >= this.#opts.queueBytes
  }

  /**
   * Ends the run: with `drain` (a finite source ended) once every queued item is committed,
   * without (a shutdown, kept short) after the batch in flight, losing nothing since the
   * stored cursor never passed the dropped items. A later stop cannot bring draining back.
   */
  stop(opts: { drain: boolean } = { drain: true }): void {
    this.#stopping = true
    this.#drain &&= opts.drain
    this.#wakeWriter?.()
    for (const wake of this.#wakeReaders.splice(0)) wake()
  }

  /** The writer loop; resolves once stopped and drained. */
  async run(): Promise<void> {
    while (await this.#waitForWork()) {
      await this.#waitForTrickle()
      await this.#writeBatch(this.#takeBatch(this.#opts.batchSize))
    }
    await this.#flushCursor(true)
  }

  /** Sleeps until items are queued, flushing the cursor meanwhile; false once done. */
  async #waitForWork(): Promise<boolean> {
    for (;;) {
      if (this.#stopping && !this.#drain) this.#discardQueue()
      if (this.#queue.length > 0) return true
      if (this.#stopping) return false
      await this.#sleepUntilWoken(this.#pendingCursor ? this.#opts.cursorIntervalMs : 60_000)
      if (this.#queue.length > 0) return true
      await this.#flushCursor(false)
    }
  }

  /** Gives a trickle a moment to become a batch; never delays a full one. */
  async #waitForTrickle(): Promise<void> {
    const { batchSize, batchDelayMs } = this.#opts
    if (this.#isFull() || this.#queue.length >= batchSize) return
    if (batchDelayMs > 0 && !this.#stopping) await this.#sleepUntilWoken(batchDelayMs, batchSize)
  }

  async #writeBatch(items: Queued[]): Promise<void> {
    for (const wake of this.#wakeReaders.splice(0)) wake()
    const events: BatchEvent[] = []
    for (const it of items) if (it.event) events.push(it.event)
    this.#advance(items)
    if (events.length > 0) await this.#commit(events)
    else await this.#flushCursor(false)
  }

  /**
   * The position a batch reaches: the last cursor an item carried (sources refuse untrusted
   * positions by giving null, see ingest/cursor-guard.ts) and the newest accepted source time.
   * Without any cursor yet, the events are applied and no cursor is stored.
   */
  #advance(items: Queued[]): void {
    for (const it of items) {
      if (it.cursor !== null) this.#reached = it.cursor
      if (it.timeUs !== null) this.#newestUs = Math.max(this.#newestUs ?? it.timeUs, it.timeUs)
    }
    if (this.#newestUs !== null) this.#ctx.metrics.noteNewestEvent(this.#newestUs)
    if (this.#reached === null) return
    this.#pendingCursor = {
      source: this.#opts.source,
      key: this.#opts.key,
      cursor: this.#reached,
      lastEventUs: this.#newestUs,
    }
  }

  #discardQueue(): void {
    if (this.#queue.length === 0) return
    this.#ctx.logger.info(
      { items: this.#queue.length },
      'shutdown: queued items dropped; the source reads them again after the stored cursor',
    )
    this.#queue = []
    this.#queuedBytes = 0
  }

  #takeBatch(max: number): Queued[] {
    // Count only events against the batch size: cursor-only frames are nearly free.
    let n = 0
    let i = 0
    let bytes = 0
    while (i < this.#queue.length && n < max && (i === 0 || bytes < this.#opts.batchBytes)) {
      const it = this.#queue[i]
      if (it.event) {
        n++
        bytes += it.bytes ?? 0
      }
      i++
    }
    const taken = this.#queue.splice(0, i)
    for (const it of taken) this.#queuedBytes -= it.bytes ?? 0
    return taken
  }

  // Waits are measured on the monotonic clock: a wall clock set back by minutes (an NTP
  // step) must not hold a batch or the cursor for those minutes.
  async #sleepUntilWoken(ms: number, untilQueue?: number): Promise<void> {
    const deadline = performance.now() + ms
    while (!this.#stopping) {
      const left = deadline - performance.now()
      if (left <= 0 || (untilQueue !== undefined && this.#queue.length >= untilQueue)) return
      if (untilQueue === undefined && this.#queue.length > 0) return
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left)
        this.#wakeWriter = () => {
          clearTimeout(t)
          resolve()
        }
      })
      this.#wakeWriter = null
    }
  }

  async #flushCursor(force: boolean): Promise<void> {
    if (!this.#pendingCursor) return
    if (!force && performance.now() - this.#lastCursorWrite < this.#opts.cursorIntervalMs) return
    await this.#commit([])
  }

  async #commit(events: BatchEvent[]): Promise<void> {
    const cursor = this.#pendingCursor
    const started = performance.now()
    const result = await applyWithRetry(this.#ctx, events, cursor, {
      logger: this.#ctx.logger,
      store: this.#ctx.metrics.store,
      isStopping: () => this.#stopping,
    })
    this.#ctx.metrics.batchDurationSeconds.observe((performance.now() - started) / 1000)
    countOutcomes(this.#ctx.metrics, this.#opts.source, result)
    if (result.newDids.length > 0) this.#opts.onNewDids?.(result.newDids)
    this.#committed += events.length
    this.#pendingCursor = null
    this.#lastCursorWrite = performance.now()
    if (cursor) this.#ctx.metrics.ingestCursor.set(cursor.cursor.value)
  }
}

export function countOutcomes(
  metrics: AppContext['metrics'],
  source: string,
  result: BatchResult,
): void {
  for (const o of result.outcomes) {
    metrics.eventsTotal.inc({ source, collection: o.collection, op: o.op, outcome: o.outcome })
  }
  for (const kind of result.recompiles) metrics.recompilesTotal.inc({ kind })
}

/** FNV-1a of the DID: stable across processes, so partitions never overlap. */
export function didPartition(did: string, count: number): number {
  let h = 0x811c9dc5
  for (let i = 0; i < did.length; i++) {
    h ^= did.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return (h >>> 0) % count
}
