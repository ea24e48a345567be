// Intervals and deadlines use the monotonic `performance.now()`, which no clock step moves.
// Times compared with a source's need the wall clock: `steadyNowMs` follows it forward but
// ignores a step back until it catches up, so a time sent before the step is not refused as
// future; `steadyNotBefore` keeps it from running behind a time the store holds.

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

/**
 * Forgets every answer given so far and follows the wall clock again. Tests that step
 * Date.now() forward call it when they put the clock back: in a shared test worker the
 * steady clock would otherwise stay ahead for every file that runs after them.
 */
export function resetSteadyClock(): void {
  anchorWall = Date.now()
  anchorMono = performance.now()
}
