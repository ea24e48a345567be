import { setImmediate as yieldToLoop } from 'node:timers/promises'

// The replay log of a local Jetstream (v1 and v2 servers alike), bounded two ways: by event
// count (the replay window) and by the characters of JSON text it keeps, because V8 holds a
// string with any non-Latin-1 character at two bytes a character and prompts run to 200 KB,
// so a count alone does not bound the heap.

export interface EventLog<T> {
  items: T[]
  /** Absolute index of items[0] after trimming. */
  base: number
  /** Sum of charsOf over the items. */
  chars: number
}

/** Appends `events` and drops the oldest past either bound; the newest always stays. */
export function appendToLog<T>(
  log: EventLog<T>,
  events: readonly T[],
  charsOf: (e: T) => number,
  maxEvents?: number,
  maxChars?: number,
): void {
  for (const e of events) {
    log.items.push(e)
    log.chars += charsOf(e)
  }
  // Trim in steps of an eighth so appends do not splice the array every time.
  const overEvents = maxEvents && log.items.length > maxEvents + Math.max(1, maxEvents >> 3)
  const overChars = maxChars && log.chars > maxChars + (maxChars >> 3)
  if (!overEvents && !overChars) return
  let drop = maxEvents ? Math.max(0, log.items.length - maxEvents) : 0
  let chars = log.chars
  for (let i = 0; i < drop; i++) chars -= charsOf(log.items[i])
  while (maxChars && chars > maxChars && drop < log.items.length - 1) {
    chars -= charsOf(log.items[drop++])
  }
  log.items.splice(0, drop)
  log.base += drop
  log.chars = chars
}

/** One reader's place in a log; `wake` is set while it waits at the tip for an append. */
export interface LogReader {
  /** Absolute index of the next item to read. */
  next: number
  closed: boolean
  wake: (() => void) | null
}

export interface WalkOptions<T, F> {
  /** The frame to send for an item, or null to skip it (not wanted by this reader). */
  pick: (e: T) => F | null
  /** Sends one frame; false stops the walk (the socket is no longer open). */
  send: (frame: F, e: T) => Promise<boolean> | boolean
  /** Frames per second at most; unlimited when absent. */
  rate?: number
}

// Sending is synchronous; yielding now and then keeps a same-process client responsive.
const YIELD_EVERY = 256

/**
 * Walks `log` for one reader until it closes: from `reader.next` to the tip, then each append
 * as it comes. The appender calls `reader.wake` after appending. A reader slower than the log's
 * bounds loses what was trimmed (as with a real Jetstream).
 */
export async function walkLog<T, F>(
  reader: LogReader,
  log: EventLog<T>,
  { pick, send, rate }: WalkOptions<T, F>,
): Promise<void> {
  const startedAt = performance.now()
  let sent = 0
  let sinceYield = 0
  while (!reader.closed) {
    if (reader.next < log.base) reader.next = log.base
    if (reader.next >= log.base + log.items.length) {
      await new Promise<void>((resolve) => {
        reader.wake = resolve
      })
      reader.wake = null
      continue
    }
    const e = log.items[reader.next++ - log.base]
    if (++sinceYield >= YIELD_EVERY) {
      sinceYield = 0
      await yieldToLoop()
    }
    const frame = pick(e)
    if (frame === null) continue
    if (rate) await pace(startedAt, rate, sent)
    if (reader.closed || !(await send(frame, e))) return
    sent++
  }
}

/** Waits until sending one more keeps the walk at `rate` items a second since `startedAt`. */
async function pace(startedAt: number, rate: number, sent: number): Promise<void> {
  const allowance = ((performance.now() - startedAt) * rate) / 1000 - sent
  if (allowance < 1) await sleep(((1 - allowance) * 1000) / rate)
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
