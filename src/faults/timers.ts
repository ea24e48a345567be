import { setTimeout as sleep } from 'node:timers/promises'

// The product's waits, on node:timers/promises: a timer that is cleared when its wait no
// longer matters, never a bare setTimeout left to fire into nothing.

/** Resolves after `ms`, or early (without throwing) when `signal` aborts. */
export async function sleepUnlessAborted(ms: number, signal?: AbortSignal): Promise<void> {
  await sleep(ms, undefined, { signal }).catch((err: unknown) => {
    if (!signal?.aborted) throw err
  })
}

/**
 * `work`'s outcome, or `late()`'s when `ms` pass first (`work` goes on, unwatched). The timer
 * is cleared when the race ends and never keeps a process up by itself.
 */
export async function withTimeout<T, U>(
  work: Promise<T>,
  ms: number,
  late: () => U,
): Promise<T | U> {
  const timer = new AbortController()
  try {
    const expired = sleep(Math.max(ms, 0), undefined, { signal: timer.signal, ref: false })
    return await Promise.race([work, expired.then(late)])
  } finally {
    timer.abort()
  }
}
