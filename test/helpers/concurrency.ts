export interface ConcurrencyProbe {
  /** Calls of `task` running now. */
  readonly active: number
  /** The most that ran at once so far. */
  readonly peak: number
  task(): Promise<void>
}

/** A task that counts how many of its calls overlap, each held for `holdMs`: for limiters. */
export function concurrencyProbe(holdMs: number): ConcurrencyProbe {
  let active = 0
  let peak = 0
  return {
    get active() {
      return active
    },
    get peak() {
      return peak
    },
    async task() {
      active++
      peak = Math.max(peak, active)
      await new Promise((r) => setTimeout(r, holdMs))
      active--
    },
  }
}
