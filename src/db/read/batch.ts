import DataLoader from 'dataloader'

// Point lookups that arrive together share one statement. Under load most of a lookup's
// database cost is the statement, not the row: each one is its own plan, snapshot,
// portal and round trip, so sharing one saves CPU on both sides (bench/README.md, "Lookups
// in batches").
//
// DataLoader collects the keys; what it is given here is when a batch may go. A batch is
// dispatched on the next turn of the event loop (setImmediate, after every socket read
// of the turn, so the requests that came in together go together) while fewer than
// `inFlight` statements run; otherwise it waits for one to finish and goes on filling up
// meanwhile (up to `maxBatch` keys, then the next batch starts). A lone lookup on a quiet
// server goes at once, in a batch of one: batching adds no wait, only the turn.
//
// No DataLoader cache: a key is read again by every batch that asks for it, since an
// answer must show a takedown or a new CID on the next request after its commit (the API's
// answer cache is what keeps answers, and the change log keeps it true).

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
