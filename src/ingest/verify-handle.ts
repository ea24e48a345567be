import type { Logger } from 'pino'
import { withTimeout } from '../faults/timers.ts'
import type { IndexEvent } from '../model/events.ts'
import type { HandleVerifier } from '../model/handles.ts'

/** An identity event's handle verified both ways, absent after `timeoutMs` or a failure. */
export async function withVerifiedHandle(
  event: IndexEvent | null,
  claimed: string | null,
  o: { verifyHandle?: HandleVerifier; verifyTimeoutMs?: number },
  logger: Logger,
): Promise<IndexEvent | null> {
  if (event?.kind !== 'identity') return event
  if (!o.verifyHandle) return { ...event, handle: null }
  try {
    const verified = o.verifyHandle(event.did, claimed)
    const handle = await withTimeout(verified, o.verifyTimeoutMs ?? 10_000, () => null)
    return { ...event, handle }
  } catch (err) {
    logger.debug({ err, handle: claimed }, 'handle verification failed')
    return { ...event, handle: null }
  }
}
