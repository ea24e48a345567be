import DataLoader from 'dataloader'

// Point lookups that arrive together share one statement, since under load a lookup's cost
// is the statement (plan, snapshot, round trip), not the row (bench/README.md, "Lookups in
// batches"). A batch goes on the next event-loop turn while fewer than `inFlight` run, and
// otherwise fills up meanwhile, so a lone lookup waits for nothing but the turn.
//
// No DataLoader cache: an answer must show a takedown or a new CID on the next request
// after its commit (the API's answer cache keeps answers, and the change log keeps it true).

export interface BatchOptions {
  /** Most keys one statement carries. */
  maxBatch: number
  /** Most statements running at once; further batches wait and grow meanwhile. */
  inFlight: number
}

/**
 * A loader of one key at a time that reads in batches: `readMany` gets the keys of a batch
 * and answers one value per key, in their order. A failed batch rejects each of its
 * lookups with the batch's error, unchanged (a retryable database error stays retryable).
 */
export function batchedReader<K, V>(
  readMany: (keys: readonly K[]) => Promise<V[]>,
  { maxBatch, inFlight }: BatchOptions,
): (key: K) => Promise<V> {
  let running = 0
  /** Batches ready to go, oldest first, each waiting for a statement to finish. */
  const waiting: Array<() => void> = []
  const go = (dispatch: () => void) => setImmediate(dispatch)
  const finished = () => {
    // The finished statement's slot passes to the oldest waiting batch, if any.
    const next = waiting.shift()
    if (next) go(next)
    else running--
  }
  const loader = new DataLoader<K, V>(
    async (keys) => {
      try {
        return await readMany(keys)
      } finally {
        finished()
      }
    },
    {
      cache: false,
      maxBatchSize: maxBatch,
      batchScheduleFn: (dispatch) => {
        if (running < inFlight) {
          running++
          go(dispatch)
        } else waiting.push(dispatch)
      },
    },
  )
  return (key) => loader.load(key)
}
