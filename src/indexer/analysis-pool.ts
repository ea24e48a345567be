import type { Logger } from 'pino'
import type { Nsids } from '../model/nsids.ts'
import type { PromptValidator } from '../model/prompt-record.ts'
import { textsOf } from '../model/record-parts.ts'
import type { PromptFacts } from '../model/rows.ts'
import { createWorkerPool, type WorkerReply } from '../workers/pool.ts'
import type { BatchEvent } from './plan.ts'
import { isPromptWrite, prepareEvent } from './prepare.ts'

// Prompt analysis (validation, hashing, search words, serialization: prepare.ts) on a worker
// thread, because the main thread also reads the socket and drives the database client. The
// pool only ever saves work: a prompt it could not analyze (an error, a worker that died)
// is analyzed by the batch itself, on this thread, exactly as without a pool.

export interface AnalysisRequest {
  did: string
  rkey: string
  record: unknown
}

/** What a worker finds: the facts, and the record's JSON without its texts. */
export interface AnalysisResult {
  facts: Omit<PromptFacts, 'recordParts'>
  rest: string
}

export interface AnalysisPool {
  /**
   * `ev` with its analysis (prepare.ts), done ahead of its batch: at once when there is
   * no worker to wait for (not a prompt write, no threads, workers not started, or closed:
   * then as it is), else a promise. The promise never rejects: the event comes back without
   * an analysis when the worker could not do it, and the batch does it. `queued`: events
   * waiting in the pipeline's queue, which starts the workers (startAt).
   */
  prepare<E extends BatchEvent>(ev: E, queued: number): E | Promise<E>
  /** Whether the worker threads were started. */
  readonly started: boolean
  close(): Promise<void>
}

export interface AnalysisPoolOptions {
  /** 0: analysis runs on this thread as events are queued (prepare.ts). */
  threads: number
  nsids: Nsids
  validator: PromptValidator
  logger: Logger
  /** The worker script; tests substitute one that fails. */
  workerUrl?: URL
  /** Queued events at which the workers start; 0: at once. Default ANALYSIS_START_AT. */
  startAt?: number
}

/**
 * A worker pays where the writer is behind (a replay, a backfill, a burst) and the queue
 * fills; following the network no worker starts, which spares a small box its heap.
 */
export const ANALYSIS_START_AT = 200

/** Below this memory limit (a cgroup's, as Node reads it) `auto` starts no worker. */
export const ANALYSIS_MIN_MEMORY = 1 << 30

/**
 * Threads for `ANALYSIS_THREADS` (`auto` by default): one on embedded PGlite, whose database
 * shares the main thread; none on Postgres, where a worker did not pay for its heap; none
 * under a memory limit below 1 GiB, where the worker's heap is what an OOM kill would take.
 */
export function analysisThreadsFor(
  setting: number | 'auto',
  database: 'postgres' | 'pglite',
  cores: number,
  memoryLimit: number = process.constrainedMemory(),
): number {
  if (setting !== 'auto') return setting
  const limited = memoryLimit > 0 && memoryLimit < ANALYSIS_MIN_MEMORY
  return database === 'pglite' && cores >= 2 && !limited ? 1 : 0
}

const WORKER_URL = new URL('./analysis-worker.ts', import.meta.url)
/** The worker's heap: records pass through it one batch at a time. */
const WORKER_LIMITS = { maxOldGenerationSizeMb: 96, maxYoungGenerationSizeMb: 32 }

export function createAnalysisPool(opts: AnalysisPoolOptions): AnalysisPool {
  const { nsids, validator, logger } = opts
  const inline = <E extends BatchEvent>(ev: E): E => prepareEvent({ nsids, validator }, ev)
  if (opts.threads <= 0) return { prepare: inline, started: false, close: async () => {} }
  const startAt = opts.startAt ?? ANALYSIS_START_AT
  const start = () =>
    createWorkerPool<AnalysisRequest, AnalysisResult>({
      name: 'analysis',
      threads: opts.threads,
      workerUrl: opts.workerUrl ?? WORKER_URL,
      workerOptions: { workerData: { nsids }, resourceLimits: WORKER_LIMITS },
      logger,
    })
  let pool = startAt <= 0 ? start() : null
  let closed = false

  const settle = <E extends BatchEvent & { kind: 'commit' }>(
    ev: E,
    reply: WorkerReply<AnalysisResult> | null,
  ): E => {
    // No reply: the batch analyzes the prompt on the main thread, as without a pool.
    if (reply === null) return ev
    if ('error' in reply) {
      // The batch analyzes it again, where the same error is handled as any analysis error
      // is; logged here so a worker-only failure is never silent.
      logger.warn({ did: ev.did, rkey: ev.rkey, err: reply.error }, 'analysis worker failed')
      return ev
    }
    const analysis: PromptFacts = {
      ...reply.facts,
      recordParts: { rest: reply.rest, ...textsOf(ev.record) },
    }
    return { ...ev, analysis }
  }

  return {
    prepare(ev, queued) {
      if (closed || !isPromptWrite({ nsids }, ev)) return ev
      if (pool === null) {
        if (queued < startAt) return inline(ev)
        logger.info({ queued, threads: opts.threads }, 'analysis workers started: ingest is behind')
        pool = start()
      }
      // Every worker gave up: analyzed here from now on.
      if (pool.live === 0) return inline(ev)
      return pool
        .request({ did: ev.did, rkey: ev.rkey, record: ev.record })
        .then((reply) => settle(ev, reply))
    },
    get started() {
      return pool !== null
    },
    async close() {
      closed = true
      await pool?.close()
    },
  }
}
