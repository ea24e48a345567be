import type { Logger } from 'pino'

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
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), timeoutMs)
  })
  try {
    return await Promise.race([verifyHandle(did, claimed), timeout])
  } catch (err) {
    logger.debug({ err, handle: claimed }, 'handle verification failed')
    return null
  } finally {
    clearTimeout(timer)
  }
}
