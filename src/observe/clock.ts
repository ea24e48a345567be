// Two clocks. Intervals and deadlines (timeouts, waits, rate limits, staleness) are measured
// on the monotonic clock, `performance.now()`, which no step of the system clock moves. A
// time compared with a source's times (a future-time guard, an event's own time) needs the
// wall clock; `steadyNowMs` is the wall clock as this process trusts it: it follows the
// system clock forward, and ignores a step back until the system clock catches up, so a
// time the source sent before the step is not refused as future after it. Across restarts
// the same holds by `steadyNotBefore`: the clock never runs behind a time the store holds.

let anchorWall = Date.now()
let anchorMono = performance.now()

/** The wall clock in ms since the epoch, never behind what it answered before. */
export function steadyNowMs(): number {
  const wall = Date.now()
  const mono = performance.now()
  // Whole milliseconds, as Date.now() gives: a time in µs is stored as a bigint.
  const carried = Math.floor(anchorWall + (mono - anchorMono))
  if (wall < carried) return carried
  anchorWall = wall
  anchorMono = mono
  return wall
}

/** From now on the clock reads at least `ms` (a time this process or an earlier one wrote). */
export function steadyNotBefore(ms: number): void {
  if (ms <= steadyNowMs()) return
  anchorWall = ms
  anchorMono = performance.now()
}
