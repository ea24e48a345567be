import type { CliProc } from './cli-proc.ts'
import { sleep, tail } from './cli-proc.ts'

// How far a running product has got, read from outside: the stored cursor in /v1/stats
// (committed with the writes it covers) or, where no API runs, the log.

export async function readCursor(p: CliProc): Promise<number | null> {
  const url = p.url()
  if (!url || p.exit()) return null
  try {
    const res = await fetch(`${url}/v1/stats`, { signal: AbortSignal.timeout(5_000) })
    if (!res.ok) return null
    const s = (await res.json()) as { ingest?: { cursor?: number | null } }
    return s.ingest?.cursor ?? null
  } catch {
    return null
  }
}

/**
 * Waits until the product has applied everything: its cursor reads `expected`, or its
 * ingestion stopped by itself (a replay file's end; then the cursor is whatever it is, and
 * the digest comparison tells whether that is right).
 */
export async function waitCaughtUp(
  p: CliProc,
  expected: number,
  timeoutMs: number,
): Promise<number | null> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const c = await readCursor(p)
    if (c === expected) return c
    if (/"msg":"ingest stopped"/.test(p.output())) return readCursor(p)
    const st = p.exit()
    if (st)
      throw new Error(
        `product exited (${st.signal ?? st.code}) before catching up:\n${tail(p.output())}`,
      )
    if (Date.now() > deadline)
      throw new Error(
        `not caught up in ${timeoutMs} ms (cursor ${c}, want ${expected}):\n${tail(p.output())}`,
      )
    await sleep(50)
  }
}
