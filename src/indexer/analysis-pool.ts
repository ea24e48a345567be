import type { Logger } from 'pino'
import type { Nsids } from '../model/nsids.ts'
import type { PromptValidator } from '../model/prompt-record.ts'
import { textsOf } from '../model/record-parts.ts'
import type { PromptFacts } from '../model/rows.ts'
import { createWorkerPool, type WorkerReply } from '../worker-pool.ts'
import type { BatchEvent } from './plan.ts'
import { prepareEvent } from './prepare.ts'

// Prompt analysis (validation, hashing, search words, serialization: prepare.ts) on a worker
// thread. It was a third of the main thread's CPU in bench:ingest, where the main thread,
// which also reads the socket, parses frames and drives the database client, is what
// limits the rate. Requests are batched per turn of the event loop; replies are remembered
// by the validator as the main thread's own analysis would be, so the batch finds them.
// The pool only ever saves work: a prompt it could not analyze (an error, a worker that
// died) is analyzed by the batch itself, on this thread, exactly as without a pool.

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
   * Analyzes a prompt write ahead of its batch. Null when there is nothing to wait for
   * (not a prompt write, or no threads: then it was analyzed here and now). The promise
   * never rejects: whatever it could not do, the batch does.
   */
  prepare(ev: BatchEvent): Promise<void> | null
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
}

/**
 * Threads for `ANALYSIS_THREADS` (`auto` by default). Embedded PGlite runs the database on
 * the main thread, which is then the writer's limit, so analysis (a fifth of that thread's
 * CPU) pays on a second core: ingest into PGlite on 2 cores, 2 runs each, 880 and 754 ev/s
 * without a worker, 1,082 and 1,140 with one. With Postgres in a process of its own a
 * worker made no measurable difference on 2 cores (+1.5% over 3 runs each) for a heap of
 * its own; set a number where cores are spare.
 */
export function analysisThreadsFor(
  setting: number | 'auto',
  database: 'postgres' | 'pglite',
  cores: number,
): number {
  if (setting !== 'auto') return setting
  return database === 'pglite' && cores >= 2 ? 1 : 0
}

const WORKER_URL = new URL('./analysis-worker.ts', import.meta.url)
/** The worker's heap: records pass through it one batch at a time. */
const WORKER_LIMITS = { maxOldGenerationSizeMb: 96, maxYoungGenerationSizeMb: 32 }

export function createAnalysisPool(opts: AnalysisPoolOptions): AnalysisPool {
  const { nsids, validator, logger } = opts
  const inline = (ev: BatchEvent) => {
    prepareEvent({ nsids, validator }, ev)
    return null
  }
  if (opts.threads <= 0) return { prepare: inline, close: async () => {} }
  const pool = createWorkerPool<AnalysisRequest, AnalysisResult>({
    name: 'analysis',
    threads: opts.threads,
    workerUrl: opts.workerUrl ?? WORKER_URL,
    workerOptions: { workerData: { nsids }, resourceLimits: WORKER_LIMITS },
    logger,
  })
  let closed = false

  const settle = (
    ev: BatchEvent & { kind: 'commit' },
    reply: WorkerReply<AnalysisResult> | null,
  ) => {
    // No reply: the batch analyzes the prompt on the main thread, as without a pool.
    if (reply === null) return
    if ('error' in reply) {
      // The batch analyzes it again, where the same error is handled as any analysis error
      // is; logged here so a worker-only failure is never silent.
      logger.warn({ did: ev.did, rkey: ev.rkey, err: reply.error }, 'analysis worker failed')
      return
    }
    const facts: PromptFacts = {
      ...reply.facts,
      recordParts: { rest: reply.rest, ...textsOf(ev.record) },
    }
    validator.remember(ev.record, { nsids, did: ev.did, rkey: ev.rkey, facts })
  }

  return {
    prepare(ev) {
      if (closed || ev.kind !== 'commit' || ev.collection !== nsids.prompt || ev.op === 'delete')
        return null
      // Every worker gave up: analyzed here from now on.
      if (pool.live === 0) return inline(ev)
      return pool
        .request({ did: ev.did, rkey: ev.rkey, record: ev.record })
        .then((reply) => settle(ev, reply))
    },
    async close() {
      closed = true
      await pool.close()
    },
  }
}
