import type { Logger } from 'pino'
import { withTimeout } from '../faults/timers.ts'
import type { HandleVerifier } from '../model/handles.ts'

/**
 * A handle check that never holds a source up for long: after `timeoutMs`, or on failure,
 * the handle is stored as absent (the DID document, not the event, is authoritative).
 */
export async function verifyWithTimeout(
  verifyHandle: HandleVerifier | undefined,
  did: string,
  claimed: string | null,
  timeoutMs: number,
  logger: Logger,
): Promise<string | null> {
  if (!verifyHandle) return null
  try {
    return await withTimeout(verifyHandle(did, claimed), timeoutMs, () => null)
  } catch (err) {
    logger.debug({ err, handle: claimed }, 'handle verification failed')
    return null
  }
}
