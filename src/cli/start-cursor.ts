import type { AppContext } from '../context.ts'
import { getStoredPosition } from '../db/read/stats.ts'
import { clearLastEventUs, deleteCursor } from '../db/writes.ts'
import { checkSourceTime } from '../ingest/cursor-guard.ts'
import type { Source } from '../ingest/source.ts'

/**
 * The stored cursor to start from, or null. A future time stored by an earlier version (which
 * took any line's time_us) would skip every later event and blind the lag: it is refused,
 * counted and logged, and the row is reset, so this run starts as if nothing was stored (top
 * of the file for replay, live tip for Jetstream: the log says to backfill).
 */
export async function trustedStartCursor(
  ctx: AppContext,
  source: Source,
  key: string,
): Promise<number | null> {
  const stored = await getStoredPosition(ctx.db, source.name, key)
  if (!stored) return null
  const nowUs = Date.now() * 1000
  const refusal = source.cursorKind === 'time_us' ? checkSourceTime(stored.cursor, nowUs) : null
  const lastRefused = stored.lastEventUs !== null && checkSourceTime(stored.lastEventUs, nowUs)
  if (!refusal && !lastRefused) return stored.cursor
  ctx.metrics.cursorRefusedTotal.inc({ source: source.name, reason: 'stored_cursor' })
  if (refusal) {
    await deleteCursor(ctx.db.orm, source.name, key)
    ctx.logger.error(
      { source: source.name, key, storedCursor: stored.cursor, reason: refusal },
      'stored cursor is a future time: ignored and reset; events after the last good one ' +
        'may have been skipped by an earlier run, run `prompt-appview backfill` to recover them',
    )
    return null
  }
  await clearLastEventUs(ctx.db.orm, source.name, key)
  ctx.logger.warn(
    { source: source.name, key, lastEventUs: stored.lastEventUs },
    'stored time of the newest event is in the future: cleared, the lag reads again from the next event',
  )
  return stored.cursor
}
