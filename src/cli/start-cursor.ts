import type { AppContext } from '../context/context.ts'
import { clearLastEventUs, deleteCursor, readStoredCursor } from '../db/writes.ts'
import { checkSourceTime } from '../ingest/cursor-guard.ts'
import type { Source } from '../ingest/source.ts'
import type { SourceCursor } from '../model/cursor.ts'
import { steadyNotBefore, steadyNowMs } from '../observe/clock.ts'

/**
 * The stored cursor to start from, or null. One of a kind the source cannot resume from, or a
 * `time_us` in the future (it would skip every later event), is refused, counted, logged and
 * reset, the log saying to backfill. "Future" is judged by a clock not behind the row's write
 * time, when the guard checked it: a clock set back since makes neither it nor later events future.
 */
export async function trustedStartCursor(
  ctx: AppContext,
  source: Source,
  key: string,
): Promise<SourceCursor | null> {
  const stored = await readStoredCursor(ctx.db, source.name, key)
  if (!stored) return null
  const { cursor } = stored
  steadyNotBefore(stored.savedAtMs)
  const nowUs = steadyNowMs() * 1000
  const foreign = !source.resumesFrom.includes(cursor.kind)
  const refusal = cursor.kind === 'time_us' ? checkSourceTime(cursor.value, nowUs) : null
  const lastRefused = stored.lastEventUs !== null && checkSourceTime(stored.lastEventUs, nowUs)
  if (!foreign && !refusal && !lastRefused) return cursor
  ctx.metrics.cursorRefusedTotal.inc({ source: source.name, reason: 'stored_cursor' })
  if (foreign || refusal) {
    await deleteCursor(ctx.db, source.name, key)
    const why = foreign
      ? `stored cursor is a ${cursor.kind}, and this source resumes from ${source.resumesFrom.join(' or ')} only`
      : 'stored cursor is a future time'
    ctx.logger.error(
      {
        source: source.name,
        key,
        storedCursor: cursor.value,
        storedKind: cursor.kind,
        reason: foreign ? 'cursor_kind' : refusal,
      },
      `${why}: ignored and reset, starting as if none was stored; events after the last good ` +
        'one may be missing, run `prompt-appview backfill` to recover them',
    )
    return null
  }
  await clearLastEventUs(ctx.db, source.name, key)
  ctx.logger.warn(
    { source: source.name, key, lastEventUs: stored.lastEventUs },
    'stored time of the newest event is in the future: cleared, the lag reads again from the next event',
  )
  return cursor
}
