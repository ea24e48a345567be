import { Worker } from 'node:worker_threads'
import type { Logger } from 'pino'
import type { Nsids } from '../model/nsids.ts'
import type { PromptValidator } from '../model/prompt-record.ts'
import { textsOf } from '../model/record-parts.ts'
import type { PromptFacts } from '../model/rows.ts'
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
  id: number
  did: string
  rkey: string
  record: unknown
}

export type AnalysisReply =
  | { id: number; facts: Omit<PromptFacts, 'recordParts'>; rest: string }
  | { id: number; error: string }

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

interface Pending {
  ev: BatchEvent & { kind: 'commit' }
  done: () => void
}

interface Slot {
  worker: Worker
  pending: Map<number, Pending>
  outbox: AnalysisRequest[]
}

const WORKER_URL = new URL('./analysis-worker.ts', import.meta.url)
/** Deaths in a row (no reply between them) after which the pool stops starting workers. */
const MAX_DEATHS = 5
/** The worker's heap: records pass through it one batch at a time. */
const WORKER_LIMITS = { maxOldGenerationSizeMb: 96, maxYoungGenerationSizeMb: 32 }

export function createAnalysisPool(opts: AnalysisPoolOptions): AnalysisPool {
  const { nsids, validator, logger } = opts
  if (opts.threads <= 0) {
    return {
      prepare: (ev) => {
        prepareEvent({ nsids, validator }, ev)
        return null
      },
      close: async () => {},
    }
  }
  let nextId = 0
  let closed = false
  let flushScheduled = false
  const slots: Slot[] = []
  /** Deaths since the last reply: a worker that cannot even start would respawn forever. */
  let deaths = 0

  const settle = (p: Pending, reply: AnalysisReply) => {
    if ('error' in reply) {
      // The batch analyzes it again on the main thread, where the same error is handled as
      // any analysis error is; logged here so a worker-only failure is never silent.
      logger.warn({ did: p.ev.did, rkey: p.ev.rkey, err: reply.error }, 'analysis worker failed')
    } else {
      const { ev } = p
      const facts: PromptFacts = {
        ...reply.facts,
        recordParts: { rest: reply.rest, ...textsOf(ev.record) },
      }
      validator.remember(ev.record, { nsids, did: ev.did, rkey: ev.rkey, facts })
    }
    p.done()
  }

  const spawn = (): Slot => {
    const worker = new Worker(opts.workerUrl ?? WORKER_URL, {
      workerData: { nsids },
      resourceLimits: WORKER_LIMITS,
    })
    // An idle pool never holds the process open; close() is what ends the workers.
    worker.unref()
    const slot: Slot = { worker, pending: new Map(), outbox: [] }
    worker.on('message', (replies: AnalysisReply[]) => {
      deaths = 0
      for (const r of replies) {
        const p = slot.pending.get(r.id)
        if (!p) continue
        slot.pending.delete(r.id)
        settle(p, r)
      }
    })
    const fail = (reason: unknown) => {
      if (closed) return
      const i = slots.indexOf(slot)
      if (i === -1) return
      logger.error(
        { err: reason, pending: slot.pending.size },
        'analysis worker died; its prompts are analyzed by their batches and a new worker starts',
      )
      for (const p of slot.pending.values()) p.done()
      slot.pending.clear()
      slot.outbox = []
      if (++deaths < MAX_DEATHS) slots[i] = spawn()
      else {
        // No slots left: prepare() analyzes here from now on.
        slots.splice(i, 1)
        logger.error(
          { deaths },
          'analysis workers keep dying; prompts are analyzed on the main thread',
        )
      }
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
        // A record the structured clone refuses: its batch analyzes it on this thread.
        logger.warn({ err, prompts: sent.length }, 'analysis requests not sent to the worker')
        for (const r of sent) {
          slot.pending.get(r.id)?.done()
          slot.pending.delete(r.id)
        }
      }
    }
  }

  return {
    prepare(ev) {
      if (closed || ev.kind !== 'commit' || ev.collection !== nsids.prompt || ev.op === 'delete')
        return null
      if (slots.length === 0) {
        prepareEvent({ nsids, validator }, ev)
        return null
      }
      let slot = slots[0]
      for (const s of slots) if (s.pending.size < slot.pending.size) slot = s
      const id = nextId++
      return new Promise<void>((done) => {
        slot.pending.set(id, { ev, done })
        slot.outbox.push({ id, did: ev.did, rkey: ev.rkey, record: ev.record })
        if (!flushScheduled) {
          flushScheduled = true
          setImmediate(flush)
        }
      })
    },
    async close() {
      if (closed) return
      closed = true
      // Nothing waits on a closed pool: its prompts are analyzed by their batches.
      for (const slot of slots) {
        for (const p of slot.pending.values()) p.done()
        slot.pending.clear()
      }
      await Promise.all(slots.map((s) => s.worker.terminate()))
    },
  }
}
