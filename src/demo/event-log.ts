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
