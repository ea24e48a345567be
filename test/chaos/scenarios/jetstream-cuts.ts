import { join } from 'node:path'
import { startJetstreamServer } from '../../../demo-network/jetstream-server.ts'
import {
  demoDictionary,
  startJetstreamV2Server,
} from '../../../demo-network/jetstream-v2-server.ts'
import { isSent } from '../../helpers/traffic.ts'
import type { Baseline } from '../lib/baseline.ts'
import { COMMON_ENV, uninterrupted } from '../lib/baseline.ts'
import { sleep, startCli, tail } from '../lib/cli-proc.ts'
import { compareDigests } from '../lib/compare.ts'
import type { ChaosContext } from '../lib/context.ts'
import { type CutPlan, type CutProxy, startCutProxy } from '../lib/cut-proxy.ts'
import { type Driver, freshDb } from '../lib/db.ts'
import { readDigest } from '../lib/digest.ts'
import { writeLines } from '../lib/events.ts'
import { waitCaughtUp } from '../lib/progress.ts'
import type { Scenario } from '../lib/scenario.ts'
import { type SyncTail, syncTail } from '../lib/sync-tail.ts'

// A local Jetstream (v1 `/subscribe`, or v2 `subscribeEvents` with dictionary-zstd binary
// frames) serving the suite's events behind a proxy that cuts the socket every ~1,500
// frames, once in the middle of a frame (on v2 inside a zstd frame). The product reconnects
// with its stored cursor (v1: time_us minus the rewind; v2: the last seq) each time and must
// end where the replay baseline ends. The v2 stream ends with a repo's resync (`#sync`, its
// records re-sent but one, then nothing): the run must end as a replay that deletes that one.

export type Wire = 'v1' | 'v2'

/**
 * A cut every 1,200-1,800 frames; the short run's smaller event set gets one every 500-700,
 * so it still sees at least two cuts. One of the first two cuts is mid-frame.
 */
export function cutPlan(ctx: ChaosContext, wire: Wire = 'v1'): CutPlan {
  const [lo, hi] = ctx.short ? [500, 700] : [1_200, 1_800]
  const midAt = ctx.rand.int(1, 2)
  return {
    nextGap: () => ctx.rand.int(lo, hi),
    midFrame: (n) => n === midAt,
    midFrameBinary: wire === 'v2',
  }
}

/** A local server of either wire with the baseline's events, once the product listens. */
interface Upstream {
  origin: string
  path: string
  connections(): number
  /** Appends the events, then the resync tail (v2); the cursors after each. */
  append(b: Baseline, tail: SyncTail | null): { events: number; end: number }
  close(): Promise<void>
}

async function startUpstream(wire: Wire): Promise<Upstream> {
  if (wire === 'v1') {
    const s = await startJetstreamServer({})
    return {
      origin: new URL(s.url).origin,
      path: '/subscribe',
      connections: () => s.requests.length,
      append: (b) => {
        s.append(b.set.lines)
        const last = b.set.events.filter(isSent).at(-1)!.time_us
        return { events: last, end: last }
      },
      close: () => s.close(),
    }
  }
  const s = await startJetstreamV2Server({ dictionary: demoDictionary() })
  return {
    origin: s.origin,
    path: new URL(s.url).pathname,
    connections: () => s.requests.length,
    append: (b, tail) => {
      s.append(b.set.events.filter(isSent))
      const events = s.lastSeq
      if (tail) s.appendSync(tail.did, tail.rev, tail.creates)
      return { events, end: s.lastSeq }
    },
    close: () => s.close(),
  }
}

export function jetstreamCutsScenario(driver: Driver, wire: Wire = 'v1'): Scenario {
  const w = wire === 'v1' ? '' : 'v2-'
  return {
    name: `jetstream-${w}cuts-${driver}`,
    // The short run takes one driver per wire: v1 on PGlite, v2 on Postgres.
    short: driver === (wire === 'v1' ? 'pglite' : 'postgres'),
    injects: `local Jetstream ${wire}${wire === 'v2' ? ' (dictionary zstd)' : ''} behind a proxy cutting the socket every ~1,500 frames (short run: ~600), once mid-frame, on ${driver}`,
    async run(ctx, shared) {
      const base = await shared.baseline(driver)
      // v2 ends with a repo's resync and then silence, which only the clock can close. Its
      // reference runs first, before the product connects: at the live tip with no cursor
      // yet, a product left waiting through it (minutes, one event a batch) would hit the
      // source's idle timeout and reconnect, rightly, without a cursor.
      const resync = wire === 'v2' ? syncTail(base.set) : null
      const ref = resync ? await resyncReference(ctx, driver, resync) : base.fine
      const db = await freshDb(ctx, driver)
      const up = await startUpstream(wire)
      ctx.defer('close the Jetstream server', () => up.close())
      const proxy = await startCutProxy(up.origin, cutPlan(ctx, wire))
      ctx.defer('close the cutting proxy', () => proxy.close())
      const p = startCli(['run', '--source', 'jetstream'], {
        ...COMMON_ENV,
        ...db.env,
        JETSTREAM_URL: `${proxy.url}${up.path}`,
      })
      ctx.defer('stop the product', () => void p.kill9())
      await p.waitListening()
      // No stored cursor means the live tip: the log is appended once the product listens.
      const deadline = Date.now() + 60_000
      while (up.connections() === 0 && Date.now() < deadline) await sleep(20)
      if (up.connections() === 0)
        return { failures: [`never connected:\n${tail(p.output())}`], figures: 'aborted' }
      const { events, end: last } = up.append(base, resync)
      // Up to the #sync the cursor moves as the events are stored; past it, only once the
      // window has ended (on a quiet stream, 10 s after its last frame: the source's default).
      await waitCaughtUp(p, events, 300_000)
      await waitCaughtUp(p, last, 60_000)
      const got = await readDigest(p.url()!, ref.records.keys())
      const cmp = compareDigests(got, ref, ref.feed)
      const failures = [...cmp.problems, ...faultsHeld(ctx, proxy, wire)]
      ctx.note(cmp.summary)
      if (got.cursor !== last) failures.push(`cursor ${got.cursor}, expected ${last}`)
      const code = await p.stop()
      if (code !== 0) failures.push(`SIGTERM exit code ${code}`)
      const mid = proxy.cuts.filter((c) => c.midFrame).length
      return {
        failures,
        figures: `${proxy.cuts.length} cuts (${mid} mid-frame), ${proxy.forwarded} frames${wire === 'v2' ? ` (${proxy.binary} binary)` : ''}, digest ${got.hash}`,
      }
    },
  }
}

/**
 * The end a v2 run with the resync tail must reach: the same events replayed with the
 * left-out prompt's delete at the end, one event per batch (the finest feed to compare to).
 */
async function resyncReference(ctx: ChaosContext, driver: Driver, tail: SyncTail) {
  const file = join(ctx.tempDir('resync-reference'), 'events.ndjson')
  writeLines(file, tail.referenceLines)
  const r = await uninterrupted(file, tail.referenceLastUs, await freshDb(ctx, driver), {
    BATCH_SIZE: '1',
  })
  await r.proc.stop()
  ctx.note(
    `resync tail: #sync of ${tail.did} with ${tail.creates.length} creates and one prompt not re-sent, then nothing; reference digest ${r.digest.hash}`,
  )
  return r.digest
}

/** Notes what the proxy did; returns what shows a fault was not injected as planned. */
function faultsHeld(ctx: ChaosContext, proxy: CutProxy, wire: Wire): string[] {
  const failures: string[] = []
  const mids = proxy.cuts.filter((c) => c.midFrame)
  const resumed = proxy.requests.slice(1).filter((q) => /[?&]cursor=\d+/.test(q)).length
  const midText = mids
    .map(
      (c) => `${c.written} of ${c.length} payload bytes of a ${c.binary ? 'binary' : 'text'} frame`,
    )
    .join('')
  ctx.note(
    `${proxy.cuts.length} cuts (${mids.length} mid-frame: ${midText}) at frames ${proxy.cuts.map((c) => c.after).join(', ')}; ${proxy.requests.length} connections, ${resumed} of the reconnects with a cursor; ${proxy.forwarded} frames forwarded, ${proxy.binary} binary; HTTP ${proxy.httpRequests.length} (${[...new Set(proxy.httpRequests.map((r) => r.split('?')[0]))].join(', ')})`,
  )
  if (proxy.cuts.length < 2 || mids.length !== 1)
    failures.push(
      `the faults were not all injected: ${proxy.cuts.length} cuts, ${mids.length} mid-frame`,
    )
  for (const c of mids)
    if (!(c.written! > 0 && c.written! < c.length!) || (wire === 'v2' && !c.binary))
      failures.push(`the mid-frame cut was not inside a ${wire === 'v2' ? 'binary ' : ''}payload`)
  if (resumed !== proxy.requests.length - 1)
    failures.push(`${proxy.requests.length - 1 - resumed} reconnects without a cursor`)
  // v2 asked for zstd: every frame binary, else the source fell back to text (the product
  // still ends right, but the binary path was not what got cut).
  if (wire === 'v2' && proxy.binary !== proxy.forwarded)
    failures.push(
      `${proxy.forwarded - proxy.binary} of ${proxy.forwarded} v2 frames were text, not zstd`,
    )
  if (wire === 'v2' && !proxy.httpRequests.some((r) => r.includes('getZstdDictionary')))
    failures.push('the dictionary was never fetched through the proxy')
  return failures
}
