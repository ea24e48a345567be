import { vi } from 'vitest'
import { resetSteadyClock } from '../../src/observe/clock.ts'

/** Ten minutes, the step of issue 43's clock jumps. */
export const TEN_MINUTES = 10 * 60_000

/**
 * Date.now() answers `shift` ms away from the real clock, and `shift` may be changed at any
 * time (an NTP step). Install it before the code under test reads `Date.now` itself, so a
 * default argument captured at construction is the spy too. Undo with restoreClock().
 */
export function steppableClock(): { shift: number } {
  const state = { shift: 0 }
  const real = Date.now.bind(Date)
  vi.spyOn(Date, 'now').mockImplementation(() => real() + state.shift)
  return state
}

/**
 * The real Date.now() again, and the steady clock (src/observe/clock.ts) back on it: it never
 * goes back by itself, so a forward step would otherwise outlive the test in its worker.
 */
export function restoreClock(): void {
  vi.restoreAllMocks()
  resetSteadyClock()
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

/** Resolves with the promise's value, or with `late` after `ms`. */
export function within<T, L>(p: Promise<T>, ms: number, late: L): Promise<T | L> {
  return Promise.race([p, sleep(ms).then(() => late)])
}
