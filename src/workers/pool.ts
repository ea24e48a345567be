import { parentPort, Worker, type WorkerOptions } from 'node:worker_threads'
import type { Logger } from 'pino'

// Work handed to worker threads: signature checks (ingest/firehose/verify-pool.ts) and prompt
// analysis (indexer/analysis-pool.ts). Requests are batched per turn of the event loop, so
// a busy source posts one message a turn, not one a request.
//
// The pool only ever saves work. A request that no worker answered (its worker died, the
// structured clone refused it, the pool closed, or no worker is left) resolves to null and
// its caller does the work on its own thread, exactly as without a pool. A dead worker is
// replaced, but not forever: one that fails as it loads would otherwise respawn in a loop,
// so after `maxDeaths` deaths with no reply between them the pool stops starting workers.

/** What a worker answers for one request: its result, or the message of what it threw. */
export type WorkerReply<Ok> = ({ id: number } & Ok) | { id: number; error: string }

export interface WorkerPool<Req, Ok> {
  /** Null: no worker answered; the caller does the work itself. Never rejects. */
  request(req: Req): Promise<WorkerReply<Ok> | null>
  /** Workers running: 0 once the pool is closed or has given up starting them. */
  readonly live: number
  close(): Promise<void>
}

export interface WorkerPoolOptions {
  /** Names the pool in its logs ("signature", "analysis"). */
  name: string
  threads: number
  workerUrl: URL
  workerOptions?: WorkerOptions
  logger: Logger
  /** Deaths in a row (no reply between them) after which no worker is started again. */
  maxDeaths?: number
}

interface Slot<Ok> {
  worker: Worker
  pending: Map<number, (reply: WorkerReply<Ok> | null) => void>
  outbox: Array<{ id: number }>
}

const MAX_DEATHS = 5

export function createWorkerPool<Req extends object, Ok>(
  opts: WorkerPoolOptions,
): WorkerPool<Req, Ok> {
  const { logger, name } = opts
  const maxDeaths = opts.maxDeaths ?? MAX_DEATHS
  let nextId = 0
  let closed = false
  let flushScheduled = false
  let deaths = 0
  const slots: Slot<Ok>[] = []

  const abandon = (slot: Slot<Ok>) => {
    for (const settle of slot.pending.values()) settle(null)
    slot.pending.clear()
    slot.outbox = []
  }

  const spawn = (): Slot<Ok> => {
    const worker = new Worker(opts.workerUrl, opts.workerOptions)
    // An idle pool never holds the process open; close() is what ends the workers.
    worker.unref()
    const slot: Slot<Ok> = { worker, pending: new Map(), outbox: [] }
    worker.on('message', (replies: WorkerReply<Ok>[]) => {
      deaths = 0
      for (const r of replies) {
        const settle = slot.pending.get(r.id)
        slot.pending.delete(r.id)
        settle?.(r)
      }
    })
    const fail = (reason: unknown) => {
      const i = slots.indexOf(slot)
      if (closed || i === -1) return
      logger.error(
        { err: reason, pending: slot.pending.size },
        `${name} worker died; its work is done on the main thread and a new worker starts`,
      )
      abandon(slot)
      if (++deaths < maxDeaths) {
        slots[i] = spawn()
        return
      }
      slots.splice(i, 1)
      logger.error({ deaths }, `${name} workers keep dying; their work stays on the main thread`)
    }
    worker.on('error', fail)
    worker.on('exit', (code) => fail(new Error(`worker exited with code ${code}`)))
    return slot
  }
  for (let i = 0; i < opts.threads; i++) slots.push(spawn())

  const flush = () => {
    flushScheduled = false
    for (const slot of slots) {
      if (slot.outbox.length === 0) continue
      const sent = slot.outbox
      slot.outbox = []
      try {
        slot.worker.postMessage(sent)
      } catch (err) {
        // A request the structured clone refuses: its caller does it on this thread.
        logger.warn({ err, requests: sent.length }, `${name} requests not sent to the worker`)
        for (const { id } of sent) {
          slot.pending.get(id)?.(null)
          slot.pending.delete(id)
        }
      }
    }
  }

  return {
    get live() {
      return closed ? 0 : slots.length
    },
    request(req) {
      if (closed || slots.length === 0) return Promise.resolve(null)
      let slot = slots[0]
      for (const s of slots) if (s.pending.size < slot.pending.size) slot = s
      const id = nextId++
      return new Promise((settle) => {
        slot.pending.set(id, settle)
        slot.outbox.push({ ...req, id })
        if (!flushScheduled) {
          flushScheduled = true
          setImmediate(flush)
        }
      })
    },
    async close() {
      if (closed) return
      closed = true
      // Nothing waits on a closed pool: what is pending goes back to its callers.
      for (const slot of slots) abandon(slot)
      await Promise.all(slots.map((s) => s.worker.terminate()))
    },
  }
}

/**
 * The worker's side: answers each request of a batch with `handle`'s result, or with the
 * message of what it threw (the caller decides what an error means).
 */
export function answerRequests<Req, Ok>(handle: (req: Req) => Ok): void {
  const port = parentPort
  if (!port) throw new Error('a pool worker runs as a worker thread')
  port.on('message', (batch: Array<Req & { id: number }>) => {
    const replies = batch.map((req): WorkerReply<Ok> => {
      try {
        return { ...handle(req), id: req.id }
      } catch (err) {
        return { id: req.id, error: err instanceof Error ? err.message : String(err) }
      }
    })
    port.postMessage(replies)
  })
}
