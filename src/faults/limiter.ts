/** Runs at most `max` of the given tasks at once, the rest wait in arrival order. */
export function createLimiter(max: number): <T>(task: () => Promise<T>) => Promise<T> {
  let active = 0
  const waiting: Array<() => void> = []
  return async (task) => {
    // A finishing task hands its slot straight to the next waiter, so a caller arriving in
    // between cannot slip past the limit.
    if (active >= max) await new Promise<void>((r) => waiting.push(r))
    else active++
    try {
      return await task()
    } finally {
      const next = waiting.shift()
      if (next) next()
      else active--
    }
  }
}
