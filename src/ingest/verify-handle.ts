import type { Logger } from 'pino'

/** Verified handle of `did`, or null; `claimed` is what the event said (fits HandleVerifier). */
export type VerifyHandle = (did: string, claimed: string | null) => Promise<string | null>

/**
 * A handle check that never holds a source up for long: after `timeoutMs`, or on failure,
 * the handle is stored as absent (the DID document, not the event, is authoritative).
 */
export async function verifyWithTimeout(
  verifyHandle: VerifyHandle | undefined,
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
