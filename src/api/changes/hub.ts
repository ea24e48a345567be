import type { WebSocket } from '@fastify/websocket'
import type { Logger } from 'pino'
import type { ChangeRow, CurrentRecord } from '../../db/read/changes.ts'
import type { ChangeFeed, FeedChunk } from './feed.ts'
import { FrameLog } from './frame-log.ts'
import type { ChangeTail, TailPage, TailReader } from './tail.ts'

// The live change subscriptions of a process (SPEC 13). A subscriber reads its own backlog,
// paced by its socket, until it reaches the hub's position, then takes the frames the hub
// reads once for everyone from the change tail (tail.ts). One that holds more than
// `maxUnsentBytes` unsent is cut, so the shared log stays bounded and never waits on it.

export interface SubscribeOptions {
  /** Subscribers at once in this process; past it a subscription is answered 503. */
  maxSubscribers: number
  /** Unsent bytes a live subscriber may hold when new frames arrive before it is cut. */
  maxUnsentBytes: number
  /** Longest a backlog page may wait for the subscriber's socket to take it. */
  stallMs: number
  /** Time between pings; a subscriber that did not answer the last one is dropped. */
  pingMs: number
}

export const SUBSCRIBE_DEFAULTS: SubscribeOptions = {
  maxSubscribers: 100,
  maxUnsentBytes: 8 * 1024 * 1024,
  stallMs: 30_000,
  pingMs: 30_000,
}

/** Bytes a socket may hold unwritten before a subscriber is handed no more for now. */
const HIGH_WATER = 256 * 1024

/** Close codes: the server goes away, the peer broke the rules or is too slow, try later. */
export const CLOSE = { goingAway: 1001, policy: 1008, internal: 1011, tryLater: 1013 } as const

/** A subscription admitted before its upgrade: where it starts and its first page. */
export interface Admitted {
  since: number
  withRecords: boolean
  first: FeedChunk
  /** Gives its place back (idempotent). */
  release: () => void
}

interface Subscriber {
  ws: WebSocket
  withRecords: boolean
  state: 'backlog' | 'live' | 'closed'
  /** Last seq it was sent or moved past (a withheld row). */
  pos: number
  /** Live: absolute index of the next frame of the hub's log it takes. */
  next: number
  /** Live: bytes of its kind of frame appended up to its place. */
  taken: number
  alive: boolean
  /** Backlog: resolves when its socket has room again. */
  waiter: (() => void) | null
  release: () => void
}

export class ChangeHub implements TailReader {
  /** The last seq the hub has read (null before the tail's first poll). */
  private pos: number | null = null
  private readonly log = new FrameLog()
  private readonly subs = new Set<Subscriber>()
  private readonly live = new Set<Subscriber>()
  private admitted = 0
  private closed = false
  private pingTimer?: NodeJS.Timeout
  private readonly tail: ChangeTail
  private readonly feed: ChangeFeed
  private readonly logger: Logger
  readonly options: SubscribeOptions

  constructor(tail: ChangeTail, feed: ChangeFeed, logger: Logger, options: SubscribeOptions) {
    this.tail = tail
    this.feed = feed
    this.logger = logger
    this.options = options
  }

  /** Takes a place for a new subscriber; null when all are taken. */
  admit(): (() => void) | null {
    if (this.closed || this.admitted >= this.options.maxSubscribers) return null
    this.admitted++
    let held = true
    return () => {
      if (!held) return
      held = false
      this.admitted--
    }
  }

  /** Starts an admitted subscription on its open socket: its backlog, then live frames. */
  subscribe(ws: WebSocket, a: Admitted): void {
    if (this.closed) {
      a.release()
      ws.close(CLOSE.goingAway, 'server shutting down')
      return
    }
    const sub: Subscriber = {
      ws,
      withRecords: a.withRecords,
      state: 'backlog',
      pos: a.since,
      next: 0,
      taken: 0,
      alive: true,
      waiter: null,
      release: a.release,
    }
    this.subs.add(sub)
    if (this.subs.size === 1)
      this.pingTimer = setInterval(() => this.ping(), this.options.pingMs).unref()
    ws.on('close', () => this.gone(sub))
    ws.on('pong', () => {
      sub.alive = true
    })
    ws.on('message', () =>
      this.cut(
        sub,
        CLOSE.policy,
        'InvalidRequest',
        'the subscription takes no messages: close it and subscribe again with since',
      ),
    )
    void this.tail.poll()
    this.backlog(sub, a.first).catch((err) => {
      this.logger.error({ err }, 'change subscription failed')
      this.cut(sub, CLOSE.internal, 'InternalServerError', 'internal error')
    })
  }

  close(): void {
    this.closed = true
    clearInterval(this.pingTimer)
    for (const sub of this.subs) {
      this.leave(sub)
      sub.ws.close(CLOSE.goingAway, 'server shutting down')
    }
  }

  // --- the backlog, per subscriber ---

  private async backlog(sub: Subscriber, first: FeedChunk): Promise<void> {
    const asked = this.feed.chunkSize(sub.withRecords)
    let chunk: FeedChunk | null = first
    while (chunk) {
      for (const line of this.feed.lines(chunk)) this.send(sub, line.slice(0, -1))
      const { rows } = chunk
      sub.pos = rows.at(-1)?.seq ?? sub.pos
      if (!(await this.drained(sub))) return
      if (await this.caughtUp(sub, rows.length < asked)) return
      chunk = await this.readBacklog(sub, asked)
    }
  }

  /** True when it went live (or is gone); false while it has more to read. */
  private async caughtUp(sub: Subscriber, endOfTable: boolean): Promise<boolean> {
    if (this.attach(sub)) return true
    // The end of the table as of that read, and the hub has not looked yet: wait for it.
    if (!endOfTable || this.pos !== null) return false
    await this.tail.poll()
    return sub.state !== 'backlog' || this.attach(sub)
  }

  /** Its next backlog page; null when it is gone or cut (the database failed). */
  private async readBacklog(sub: Subscriber, asked: number): Promise<FeedChunk | null> {
    try {
      const chunk = await this.feed.read(sub.pos, asked, sub.withRecords)
      return sub.state === 'backlog' ? chunk : null
    } catch (err) {
      this.logger.warn({ err }, 'reading the backlog of a change subscription failed')
      this.cut(
        sub,
        CLOSE.tryLater,
        'ServiceUnavailable',
        `database unavailable: subscribe again with since=${sub.pos}`,
      )
      return null
    }
  }

  /** Resolves true once the socket holds less than HIGH_WATER; false if it was cut or left. */
  private drained(sub: Subscriber): Promise<boolean> {
    if (sub.state !== 'backlog') return Promise.resolve(false)
    if (sub.ws.bufferedAmount < HIGH_WATER) return Promise.resolve(true)
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        sub.waiter = null
        this.tooSlow(sub, `took no frames for ${this.options.stallMs} ms`)
        resolve(false)
      }, this.options.stallMs)
      sub.waiter = () => {
        clearTimeout(timer)
        resolve(sub.state === 'backlog')
      }
    })
  }

  /**
   * Takes it live once it has read as far as the hub. The check and the move are one
   * synchronous step, so no frame can be appended in between.
   */
  private attach(sub: Subscriber): boolean {
    if (sub.state !== 'backlog' || this.pos === null || sub.pos < this.pos) return false
    sub.state = 'live'
    sub.next = this.log.end
    sub.taken = this.log.bytes(sub.withRecords)
    this.live.add(sub)
    return true
  }

  // --- the change tail's reader ---

  /** Whole rows are needed while someone is live; otherwise only the position. */
  wantsRows(): boolean {
    return this.live.size > 0
  }

  async read({ rows, full }: TailPage): Promise<void> {
    if (!full) {
      // The tail reads whole rows whenever someone is live, and hands a page over without a
      // pause after checking: frames for a live subscriber are never missing.
      if (this.live.size > 0) throw new Error('change rows read without their frames')
      this.pos = rows[rows.length - 1].seq
      return
    }
    // Records are read when a subscriber asks for them; the check and the append below
    // run without a pause, so no one who asks can go live in between.
    const records =
      this.wantsRecords() && full.some((r) => !r.withheld && r.op !== 'delete')
        ? await this.feed.recordsOf(full)
        : null
    if (this.closed) return
    this.append(full, records)
    this.trim()
  }

  /** The tail moved to the head (its start, a burst while nobody was live). */
  skipped(head: number): void {
    this.pos = Math.max(this.pos ?? 0, head)
    this.trim()
  }

  private wantsRecords(): boolean {
    return [...this.subs].some((sub) => sub.withRecords && sub.state !== 'closed')
  }

  private append(rows: ChangeRow[], records: Map<string, CurrentRecord> | null): void {
    if (rows.length === 0) return
    // Too slow: more than the bound still unsent from before.
    for (const sub of this.live) {
      if (this.unsent(sub) > this.options.maxUnsentBytes)
        this.tooSlow(sub, `more than ${this.options.maxUnsentBytes} bytes of changes unsent`)
    }
    const plain = this.feed.lines({ rows, records: null })
    const withRecord = records ? this.feed.lines({ rows, records }) : null
    const shown = rows.filter((r) => !r.withheld)
    for (const [i, row] of shown.entries())
      this.log.push(row.seq, plain[i].slice(0, -1), withRecord ? withRecord[i].slice(0, -1) : null)
    this.pos = rows.at(-1)!.seq
    for (const sub of this.live) this.pump(sub)
  }

  private unsent(sub: Subscriber): number {
    return this.log.bytes(sub.withRecords) - sub.taken + sub.ws.bufferedAmount
  }

  /** Hands a live subscriber the frames after its place while its socket has room. */
  private pump(sub: Subscriber): void {
    while (sub.state === 'live' && sub.next < this.log.end && sub.ws.bufferedAmount < HIGH_WATER) {
      const f = this.log.at(sub.next)
      sub.next++
      sub.taken = sub.withRecords ? f.recordEnd : f.plainEnd
      // Read in its backlog already (it may have read past the hub's position).
      if (f.seq <= sub.pos) continue
      sub.pos = f.seq
      // record is set whenever a subscriber asking for it was live (see read).
      this.send(sub, sub.withRecords ? (f.record ?? f.plain) : f.plain)
    }
  }

  private trim(): void {
    let min = this.log.end
    for (const sub of this.live) min = Math.min(min, sub.next)
    this.log.dropBefore(min)
  }

  // --- sockets ---

  private send(sub: Subscriber, text: string): void {
    sub.ws.send(text, (err) => {
      // An error: the socket is closing, and its 'close' cleans up.
      if (err || sub.ws.bufferedAmount >= HIGH_WATER) return
      this.wake(sub)
      if (sub.state === 'live') this.pump(sub)
    })
  }

  /** Ends a subscription with a reason frame, then the close. */
  private cut(sub: Subscriber, code: number, error: string, message: string): void {
    if (sub.state === 'closed') return
    this.leave(sub)
    this.logger.info({ error, pos: sub.pos }, 'change subscription cut')
    sub.ws.send(JSON.stringify({ error, message }))
    sub.ws.close(code, error)
  }

  private tooSlow(sub: Subscriber, why: string): void {
    this.cut(sub, CLOSE.policy, 'ConsumerTooSlow', `${why}: subscribe again with since=${sub.pos}`)
  }

  private wake(sub: Subscriber): void {
    const w = sub.waiter
    sub.waiter = null
    w?.()
  }

  /** No more frames for it; its place is kept until its socket closes. */
  private leave(sub: Subscriber): void {
    sub.state = 'closed'
    this.live.delete(sub)
    this.wake(sub)
  }

  private gone(sub: Subscriber): void {
    this.leave(sub)
    this.subs.delete(sub)
    sub.release()
    if (this.subs.size === 0) clearInterval(this.pingTimer)
    this.trim()
  }

  /** A subscriber that did not answer the last ping is gone: its place is freed. */
  private ping(): void {
    for (const sub of this.subs) {
      if (!sub.alive) {
        sub.ws.terminate()
        continue
      }
      sub.alive = false
      sub.ws.ping()
    }
  }
}
