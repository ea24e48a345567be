import { setTimeout as sleep } from 'node:timers/promises'
import type { AppContext } from '../context/context.ts'
import { dbRetryDelayMs } from '../db/retry.ts'
import { causeChain, isRetryable, type StoreFault, storeFaultOf } from '../faults/errors.ts'
import type { CursorPosition } from '../model/events.ts'
import type { StoreHealth } from '../observe/store-health.ts'
import { applyBatch, type BatchResult, type IndexerDeps } from './apply.ts'
import type { BatchEvent } from './plan.ts'

// How the pipeline survives the database: an outage is waited out (reading pauses behind
// the full queue meanwhile); an event refused for good costs itself and nothing else.

export interface RetryOptions {
  logger: AppContext['logger']
  /** Where a pause for the store's sake is reported (/readyz, the ingest_paused metric). */
  store: StoreHealth
  /** A shutdown gives up on an outage after 10 tries; a running pipeline never does. */
  isStopping: () => boolean
}

const PAUSE_MESSAGES: Record<StoreFault, string> = {
  disk_full:
    'ingestion paused: the disk under the database is full; nothing is skipped, and ingestion resumes by itself once there is room',
  database:
    'ingestion paused: the database refuses writes; nothing is skipped, and ingestion resumes by itself once it answers',
}

export async function applyWithRetry(
  deps: IndexerDeps,
  events: BatchEvent[],
  cursor: CursorPosition | null,
  opts: RetryOptions,
): Promise<BatchResult> {
  let isolate = false
  for (let attempt = 0; ; attempt++) {
    try {
      const result = isolate
        ? await applyOneByOne(deps, events, cursor, opts.logger)
        : await applyBatch(deps, events, cursor)
      const paused = opts.store.pause()
      if (paused) {
        opts.store.noteResumed()
        opts.logger.info({ reason: paused.reason, since: paused.since }, 'ingestion resumed')
      }
      return result
    } catch (err) {
      const next = await afterFailure(err, attempt, events.length > 1 && !isolate, opts)
      if (next === 'throw') throw err
      if (next === 'isolate') {
        // Something in the batch is refused for good: find it by applying one at a time,
        // so one poisoned event costs itself and nothing else.
        opts.logger.error({ err, events: events.length }, 'batch refused, isolating the bad event')
        isolate = true
        attempt = -1
      }
    }
  }
}

/**
 * A fault of the store (a full disk, a PANIC, an outage) is waited out, never blamed on an
 * event; only a refusal of the batch itself sends it down the isolating path, once.
 */
async function afterFailure(
  err: unknown,
  attempt: number,
  canIsolate: boolean,
  opts: RetryOptions,
): Promise<'retry' | 'isolate' | 'throw'> {
  const fault = storeFaultOf(err) ?? (isRetryable(err) ? 'database' : null)
  if (!fault) return canIsolate ? 'isolate' : 'throw'
  if (attempt >= 10 && opts.isStopping()) return 'throw'
  const delay = dbRetryDelayMs(attempt)
  const first = opts.store.pause()?.reason !== fault
  opts.store.notePaused(fault, describe(err))
  // The first failure of a pause is an error an operator must see; the retries are warnings.
  const fields = { err, reason: fault, attempt, delay }
  if (first) opts.logger.error(fields, PAUSE_MESSAGES[fault])
  else opts.logger.warn(fields, 'batch failed, retrying')
  await sleep(delay)
  return 'retry'
}

/** The innermost message of an error's cause chain: the store's own words. */
function describe(err: unknown): string {
  let message = String(err)
  for (const e of causeChain(err)) if (typeof e.message === 'string') message = e.message
  return message.slice(0, 300)
}

async function applyOneByOne(
  deps: IndexerDeps,
  events: BatchEvent[],
  cursor: CursorPosition | null,
  logger: AppContext['logger'],
): Promise<BatchResult> {
  const total: BatchResult = { outcomes: [], changes: 0, newDids: [], recompiles: [] }
  for (const ev of events) {
    try {
      const r = await applyBatch(deps, [ev], null)
      total.outcomes.push(...r.outcomes)
      total.changes += r.changes
      total.newDids.push(...r.newDids)
      total.recompiles.push(...r.recompiles)
    } catch (err) {
      if (storeFaultOf(err) || isRetryable(err)) throw err
      const { collection, op } = labelsOf(ev)
      total.outcomes.push({ collection, op, outcome: 'error' })
      logger.error(
        { err, did: ev.did, kind: ev.kind, collection, op },
        'event refused by the database, skipped',
      )
    }
  }
  const r = await applyBatch(deps, [], cursor)
  total.changes += r.changes
  return total
}

/** The metric labels of an event that never reached a plan. */
function labelsOf(ev: BatchEvent): { collection: string; op: string } {
  if (ev.kind === 'commit') return { collection: ev.collection, op: ev.op }
  const op = ev.kind === 'account' || ev.kind === 'identity' ? ev.kind : 'unknown'
  return { collection: 'unknown', op }
}
