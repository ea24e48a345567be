import type { AppContext } from '../context/context.ts'
import { dbRetryDelayMs } from '../db/retry.ts'
import { isRetryable } from '../faults/errors.ts'
import type { CursorPosition } from '../model/events.ts'
import { applyBatch, type BatchResult, type IndexerDeps } from './apply.ts'
import type { BatchEvent } from './plan.ts'

// How the pipeline survives the database: an outage is waited out (reading pauses behind
// the full queue meanwhile); an event refused for good costs itself and nothing else.

export interface RetryOptions {
  logger: AppContext['logger']
  /** A shutdown gives up on an outage after 10 tries; a running pipeline never does. */
  isStopping: () => boolean
}

export async function applyWithRetry(
  deps: IndexerDeps,
  events: BatchEvent[],
  cursor: CursorPosition | null,
  opts: RetryOptions,
): Promise<BatchResult> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await applyBatch(deps, events, cursor)
    } catch (err) {
      const retryable = isRetryable(err)
      if (retryable && (attempt < 10 || !opts.isStopping())) {
        // A database outage: reading pauses behind the full queue until this succeeds.
        const delay = dbRetryDelayMs(attempt)
        opts.logger.warn({ err, attempt, delay }, 'batch failed, retrying')
        await new Promise((r) => setTimeout(r, delay))
        continue
      }
      if (events.length <= 1 || retryable) throw err
      // Something in the batch is refused for good: find it by applying one at a time,
      // so one poisoned event costs itself and nothing else.
      opts.logger.error({ err, events: events.length }, 'batch refused, isolating the bad event')
      return applyOneByOne(deps, events, cursor, opts.logger)
    }
  }
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
      if (isRetryable(err)) throw err
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
