// Small readers of untrusted firehose values, shared by the frame and commit decoders.

import { steadyNowMs } from '../../observe/clock.ts'

/** The frame's `time` in µs, or null when it is not a date (never our clock: the lag would lie). */
export function toTimeUs(time: unknown): number | null {
  const ms = typeof time === 'string' ? Date.parse(time) : Number.NaN
  return Number.isFinite(ms) ? ms * 1000 : null
}

/** An event's own time: the frame's, else when it was read (items keep null for the lag). */
export function eventUs(timeUs: number | null): number {
  return timeUs ?? steadyNowMs() * 1000
}

export function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined
}

export function reasonOf(err: unknown): string {
  const e = err as Error & { cause?: unknown }
  const msg = e?.message ?? String(err)
  return e?.cause instanceof Error ? `${msg}: ${e.cause.message}` : msg
}
