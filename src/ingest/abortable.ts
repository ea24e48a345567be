import type { Sink, SourceItem } from '../model/events.ts'

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
