import type { Sink, SourceItem } from '../indexer/sink.ts'

/**
 * Pushes unless `signal` aborts first: a source must stop promptly on shutdown even while
 * a full write queue holds its push. Returns false when aborted.
 */
export async function pushUnlessAborted(
  sink: Sink,
  item: SourceItem,
  signal: AbortSignal,
): Promise<boolean> {
  if (signal.aborted) return false
  let onAbort: (() => void) | undefined
  const aborted = new Promise<false>((resolve) => {
    onAbort = () => resolve(false)
    signal.addEventListener('abort', onAbort, { once: true })
  })
  try {
    return await Promise.race([sink.push(item).then(() => !signal.aborted), aborted])
  } finally {
    signal.removeEventListener('abort', onAbort!)
  }
}

/** Resolves after `ms`, or early (without throwing) when `signal` aborts. */
export function sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve()
    const done = () => {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal.addEventListener('abort', done, { once: true })
  })
}
