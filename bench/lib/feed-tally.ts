// What the freshness benchmark sent, and which of it the change feed has shown. The feed
// has one change per record a batch left changed, for its net write: a change seen for a
// record settles every earlier write of it still in flight, as superseded; and writes that
// end in a delete of a record the feed last showed deleted (or never showed) cancelled out
// within one batch, created and deleted there. Records of an account that ends the run
// inactive (taken down, deactivated, deleted) are hidden with it and never shown. Only what
// is none of these is missing. A write sent to an inactive account, or still in flight when
// its account goes inactive, shows when the account is active again, seconds later: that
// wait is the account's, not the indexer's, so such a write is still expected but not timed
// (`heldByAccount`). A write of the content the feed last showed for its record, nothing
// of it in flight, changes nothing and is never shown (`unchanged`).

export interface FeedChange {
  seq: number
  op: string
  uri: string
  cid: string | null
}

interface Sent {
  at: number
  /** Sent after the warm-up: its latency is measured. */
  counted: boolean
}

const didOf = (uri: string) => uri.slice('at://'.length, uri.indexOf('/', 'at://'.length))

const keyOf = (uri: string, op: string, cid: string | null | undefined) =>
  `${uri} ${op === 'delete' ? 'delete' : cid}`

export class FeedTally {
  readonly latencies: number[] = []
  matching = 0
  observed = 0
  superseded = 0
  cancelled = 0
  hidden = 0
  heldByAccount = 0
  unchanged = 0
  readonly #inflight = new Map<string, Sent>()
  /** Keys in flight per record, in the order sent. */
  readonly #byRecord = new Map<string, string[]>()
  /** The last change the feed showed for each record, whoever wrote it. */
  readonly #last = new Map<string, { op: string; cid: string | null }>()
  /** DIDs whose last account event sent said inactive. */
  readonly #inactive = new Set<string>()

  get unobserved(): number {
    return this.#inflight.size
  }

  sent(uri: string, op: string, cid: string | undefined, at: number, counted: boolean): void {
    const key = keyOf(uri, op, cid)
    this.matching++
    // The record as the feed last showed it, nothing of it in flight: the write changes
    // nothing and the feed rightly shows nothing for it.
    const last = this.#last.get(uri)
    if (op !== 'delete' && last?.op !== 'delete' && last?.cid === cid && !this.#byRecord.has(uri)) {
      this.unchanged++
      return
    }
    // A write to an inactive account shows when the account is back.
    const held = counted && this.#inactive.has(didOf(uri))
    if (held) this.heldByAccount++
    // A second delete of a record still in flight shares the first's key: the feed's delete
    // carries no cid to tell them apart, so the pair counts as seen once.
    this.#inflight.set(key, { at, counted: counted && !held })
    const keys = this.#byRecord.get(uri)
    if (keys) keys.push(key)
    else this.#byRecord.set(uri, [key])
  }

  account(did: string, active: boolean): void {
    if (active) {
      this.#inactive.delete(did)
      return
    }
    this.#inactive.add(did)
    for (const [uri, keys] of this.#byRecord) {
      if (didOf(uri) !== did) continue
      for (const k of keys) {
        const sent = this.#inflight.get(k)
        if (!sent?.counted) continue
        sent.counted = false
        this.heldByAccount++
      }
    }
  }

  /** Up to n of the keys neither seen nor superseded, for a report to show. */
  missing(n: number): string[] {
    return [...this.#inflight.keys()].slice(0, n)
  }

  /** Returns whether the change was one of ours. */
  seen(c: FeedChange, now: number): boolean {
    this.#last.set(c.uri, { op: c.op, cid: c.cid })
    const key = keyOf(c.uri, c.op, c.cid)
    const hit = this.#inflight.get(key)
    if (!hit) return false
    this.observed++
    if (hit.counted) this.latencies.push(now - hit.at)
    const keys = this.#byRecord.get(c.uri) ?? []
    for (const k of keys.splice(0, keys.indexOf(key) + 1)) {
      if (this.#inflight.delete(k) && k !== key) this.superseded++
    }
    if (keys.length === 0) this.#byRecord.delete(c.uri)
    return true
  }

  /**
   * Once every event sent is committed: settles what the feed rightly never showed, the
   * writes that cancelled out within a batch and the records hidden with their account.
   */
  settleEnd(): void {
    for (const [uri, keys] of this.#byRecord) {
      const hidden = this.#inactive.has(didOf(uri))
      const cancelled =
        keys.at(-1)?.endsWith(' delete') && (this.#last.get(uri)?.op ?? 'delete') === 'delete'
      if (!hidden && !cancelled) continue
      for (const k of keys) if (this.#inflight.delete(k)) hidden ? this.hidden++ : this.cancelled++
      this.#byRecord.delete(uri)
    }
  }
}
