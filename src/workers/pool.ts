import type { WorkerOptions } from 'node:worker_threads'
import type { Logger } from 'pino'
import { Piscina } from 'piscina'

// Work handed to worker threads: signature checks (ingest/firehose/verify-pool.ts) and prompt
// analysis (indexer/analysis-pool.ts), on piscina. The pool only ever saves work: a request
// no worker answered (its worker died, the structured clone refused it, the pool closed or
// gave up) resolves to null and its caller does the work on its own thread.

/** What a worker answers for one request: its result, or the message of what it threw. */
export type WorkerReply<Ok> = Ok | { error: string }

export interface WorkerPoolOptions {
  /** Names the pool in its logs ("signature", "analysis"). */
  name: string
  threads: number
  workerUrl: URL
  workerOptions?: Pick<WorkerOptions, 'workerData' | 'resourceLimits'>
  logger: Logger
  /** Deaths in a row (no answer between them) after which the pool stops. */
  maxDeaths?: number
}

const MAX_DEATHS = 5

export class WorkerPool<Req extends object, Ok extends object> {
  private readonly opts: WorkerPoolOptions
  private readonly pool: Piscina
  private readonly maxDeaths: number
  private deaths = 0
  private closed = false

  constructor(opts: WorkerPoolOptions) {
    this.opts = opts
    this.maxDeaths = opts.maxDeaths ?? MAX_DEATHS
    this.pool = new Piscina({
      filename: opts.workerUrl.href,
      minThreads: opts.threads,
      maxThreads: opts.threads,
      // Workers live as long as the pool: an idle one costs only its heap.
      idleTimeout: Number.POSITIVE_INFINITY,
      workerData: opts.workerOptions?.workerData,
      resourceLimits: opts.workerOptions?.resourceLimits,
    })
    // A worker that fails as it loads, with nothing to answer: piscina starts no other.
    this.pool.on('error', (err: unknown) => this.died(err))
  }

  /** Workers running: 0 once the pool is closed or no worker is left. */
  get live(): number {
    return this.closed ? 0 : this.pool.threads.length
  }

  /** Null: no worker answered; the caller does the work itself. Never rejects. */
  async request(req: Req): Promise<WorkerReply<Ok> | null> {
    if (this.closed || this.pool.threads.length === 0) return null
    try {
      const reply = (await this.pool.run(req)) as WorkerReply<Ok>
      this.deaths = 0
      return reply
    } catch (err) {
      if (this.closed) return null
      if ((err as Error)?.name === 'DataCloneError')
        this.opts.logger.warn({ err }, `${this.opts.name} requests not sent to the worker`)
      else this.died(err)
      return null
    }
  }

  private died(err: unknown): void {
    if (this.closed) return
    const { logger, name } = this.opts
    logger.error(
      { err },
      `${name} worker died; its work is done on the main thread and a new worker starts`,
    )
    if (++this.deaths < this.maxDeaths && this.pool.threads.length > 0) return
    logger.error(
      { deaths: this.deaths },
      `${name} workers keep dying; their work stays on the main thread`,
    )
    void this.close()
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await this.pool.destroy()
  }
}

export function createWorkerPool<Req extends object, Ok extends object>(
  opts: WorkerPoolOptions,
): WorkerPool<Req, Ok> {
  return new WorkerPool(opts)
}

/**
 * A worker module's default export: `handle`'s result, or the message of what it threw (the
 * caller decides what an error means).
 */
export function answerRequests<Req, Ok>(handle: (req: Req) => Ok): (req: Req) => WorkerReply<Ok> {
  return (req) => {
    try {
      return handle(req)
    } catch (err) {
      return { error: err instanceof Error ? err.message : String(err) }
    }
  }
}
