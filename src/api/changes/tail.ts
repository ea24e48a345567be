import type { Logger } from 'pino'
import type { Database } from '../../db/client.ts'
import {
  type ChangeRow,
  changedReposSince,
  latestChangeSeq,
  pollChanges,
} from '../../db/read/changes.ts'

// The one reader of the change log in a process: it polls every `pollMs`, and at once on a
// commit of this process, and hands each new row to its readers in seq order. The writers'
// lock makes seqs visible in increasing order, so reading after the last seq misses nothing.

export interface TailOptions {
  pollMs: number
  pageSize: number
  /** Rows one poll reads before it jumps to the head instead, when no reader needs them all. */
  burstRows: number
}

export const TAIL_DEFAULTS: TailOptions = { pollMs: 200, pageSize: 500, burstRows: 10_000 }

/** A page of the log: each row's seq and repo, and the rows whole when a reader wanted them. */
export interface TailPage {
  rows: ReadonlyArray<{ seq: number; did: string }>
  full: ChangeRow[] | null
}

export interface TailReader {
  /** True while it needs every row whole: the tail then reads them so and never skips. */
  wantsRows(): boolean
  /** The rows after the previous page (never none), in the step that checked `wantsRows`. */
  read(page: TailPage): void | Promise<void>
  /** The tail moved to `head` without handing over the rows before it (start, a burst). */
  skipped(head: number): void
  /**
   * A poll started at `startedAt` handed over every row committed before it; not `clean` when
   * a commit of this process was signalled while it ran.
   */
  polled?(startedAt: number, clean: boolean): void
  /** A transaction of this process ended: what it wrote is not read yet. */
  committed?(): void
}

export class ChangeTail {
  #seq: number | null = null
  /** Another poll is asked for after the one under way. */
  #again = false
  #running: Promise<void> | null = null
  /** A commit signalled since the running poll started (see TailReader.polled). */
  #signalled = false
  #failing = false
  #closed = false
  #timer: NodeJS.Timeout | null = null
  #stopSignal: (() => void) | null = null
  readonly #readers: TailReader[] = []
  readonly #db: Database
  readonly #logger: Logger
  readonly #opts: TailOptions

  constructor(db: Database, logger: Logger, opts: TailOptions = TAIL_DEFAULTS) {
    this.#db = db
    this.#logger = logger
    this.#opts = opts
  }

  /** Adds a reader; all are added before `start`, so each sees the log from the same seq. */
  add(reader: TailReader): void {
    this.#readers.push(reader)
  }

  start(): void {
    // A tick while a poll runs is dropped: that poll's result vouches from its own start.
    this.#timer = setInterval(() => {
      if (!this.#running) void this.poll()
    }, this.#opts.pollMs).unref()
    this.#stopSignal = this.#db.onCommit(() => {
      this.#signalled = true
      for (const r of this.#readers) r.committed?.()
      void this.poll()
    })
    void this.poll()
  }

  /** Polls now (after any poll under way); settles, never rejecting, when that poll is done. */
  poll(): Promise<void> {
    this.#again = true
    this.#running ??= this.#loop()
    return this.#running
  }

  /** The poll under way, or a new one. */
  settled(): Promise<void> {
    return this.#running ?? this.poll()
  }

  close(): void {
    this.#closed = true
    if (this.#timer) clearInterval(this.#timer)
    this.#stopSignal?.()
  }

  async #loop(): Promise<void> {
    try {
      while (this.#again && !this.#closed) {
        this.#again = false
        this.#signalled = false
        const startedAt = performance.now()
        if (this.#seq === null) await this.#skipToHead()
        else await this.#readOn(this.#seq)
        if (!this.#closed) for (const r of this.#readers) r.polled?.(startedAt, !this.#signalled)
      }
      if (this.#failing) this.#logger.info('reading the change log again')
      this.#failing = false
    } catch (err) {
      // Readers keep their place: the next tick reads on from the same seq. Logged once per
      // outage, as the ticks go on failing every pollMs.
      if (!this.#failing) this.#logger.warn({ err }, 'reading the change log failed; retrying')
      this.#failing = true
    } finally {
      this.#running = null
    }
  }

  /** Reads and hands over the pages after `seq`, or jumps to the head past a burst. */
  async #readOn(seq: number): Promise<void> {
    const { pageSize, burstRows } = this.#opts
    for (let read = 0; ; read += pageSize) {
      if (read >= burstRows && !this.#wantsRows() && (await this.#skipToHead())) return
      const rows = await this.#readPage(seq)
      if (rows.length === 0 || this.#closed) return
      seq = rows[rows.length - 1].seq
      this.#seq = seq
      if (rows.length < pageSize) return
    }
  }

  /** Jumps past a burst (a backfill, a takedown); false when a reader began to need every row. */
  async #skipToHead(): Promise<boolean> {
    const head = await latestChangeSeq(this.#db)
    if (this.#closed || (this.#seq !== null && this.#wantsRows())) return false
    this.#seq = Math.max(this.#seq ?? 0, head)
    for (const r of this.#readers) r.skipped(this.#seq)
    return true
  }

  /** Reads the page after `since` and hands it over; returns its rows. */
  async #readPage(since: number): Promise<TailPage['rows']> {
    const { pageSize } = this.#opts
    for (;;) {
      if (this.#wantsRows()) {
        const full = await pollChanges(this.#db, since, pageSize)
        await this.#handOver({ rows: full, full })
        return full
      }
      const rows = await changedReposSince(this.#db, since, pageSize)
      // A reader began to need whole rows during that read (a subscriber went live): the
      // same rows again, whole.
      if (this.#wantsRows()) continue
      await this.#handOver({ rows, full: null })
      return rows
    }
  }

  /** Calls every reader in the step that checked `wantsRows`, so none changes its mind between. */
  async #handOver(page: TailPage): Promise<void> {
    if (page.rows.length === 0 || this.#closed) return
    await Promise.all(this.#readers.map((r) => r.read(page)))
  }

  #wantsRows(): boolean {
    return this.#readers.some((r) => r.wantsRows())
  }
}
