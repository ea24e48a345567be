import { isSent } from '../../../bench/lib/traffic.ts'
import { startJetstreamServer } from '../../../src/demo/jetstream-server.ts'
import { COMMON_ENV } from '../lib/baseline.ts'
import { sleep, startCli, tail } from '../lib/cli-proc.ts'
import { compareDigests } from '../lib/compare.ts'
import type { ChaosContext } from '../lib/context.ts'
import { type CutPlan, startCutProxy } from '../lib/cut-proxy.ts'
import { type Driver, freshDb } from '../lib/db.ts'
import { readDigest } from '../lib/digest.ts'
import { waitCaughtUp } from '../lib/progress.ts'
import type { Scenario } from '../lib/scenario.ts'

// A local Jetstream v1 serving the suite's events behind a proxy that cuts the socket
// every ~1,500 frames, once in the middle of a frame. The product reconnects with its
// stored cursor (minus the rewind) each time and must end where the replay baseline ends.
//
// Jetstream v2 (branch i12) hook: once src/demo has a v2 server, add a flavour here that
// starts it and points JETSTREAM_URL at /xrpc/network.bsky.jetstream.subscribeEvents;
// the proxy forwards binary (zstd) frames as they are, and the expected cursor becomes the
// last event's seq instead of its time_us. Until then `jetstream-v2-cuts` reports SKIP.

/**
 * A cut every 1,200-1,800 frames; the short run's smaller event set gets one every 800-1,100,
 * so it still sees at least two cuts. One of the first two cuts is mid-frame.
 */
export function cutPlan(ctx: ChaosContext): CutPlan {
  const [lo, hi] = ctx.short ? [800, 1_100] : [1_200, 1_800]
  const midAt = ctx.rand.int(1, 2)
  return { nextGap: () => ctx.rand.int(lo, hi), midFrame: (n) => n === midAt }
}

export function jetstreamCutsScenario(driver: Driver): Scenario {
  return {
    name: `jetstream-cuts-${driver}`,
    short: driver === 'pglite',
    injects: `local Jetstream v1 behind a proxy cutting the socket every ~1,500 frames (short run: ~950), once mid-frame, on ${driver}`,
    async run(ctx, shared) {
      const base = await shared.baseline(driver)
      const db = await freshDb(ctx, driver)
      const server = await startJetstreamServer({})
      ctx.defer('close the Jetstream server', () => server.close())
      const proxy = await startCutProxy(new URL(server.url).origin, cutPlan(ctx))
      ctx.defer('close the cutting proxy', () => proxy.close())
      const sent = base.set.events.filter(isSent)
      const last = sent.at(-1)!.time_us
      const p = startCli(['run', '--source', 'jetstream'], {
        ...COMMON_ENV,
        ...db.env,
        JETSTREAM_URL: `${proxy.url}/subscribe`,
      })
      ctx.defer('stop the product', () => void p.kill9())
      await p.waitListening()
      // No stored cursor means the live tip: the log is appended once the product listens.
      const deadline = Date.now() + 60_000
      while (server.requests.length === 0 && Date.now() < deadline) await sleep(20)
      if (server.requests.length === 0)
        return { failures: [`never connected:\n${tail(p.output())}`], figures: 'aborted' }
      server.append(base.set.lines)
      await waitCaughtUp(p, last, 300_000)
      const got = await readDigest(p.url()!, base.fine.records.keys())
      const cmp = compareDigests(got, base.fine, base.fine.feed)
      const mid = proxy.cuts.filter((c) => c.midFrame).length
      const resumed = proxy.requests.slice(1).filter((q) => /[?&]cursor=\d+/.test(q)).length
      ctx.note(
        `${proxy.cuts.length} cuts (${mid} mid-frame) at frames ${proxy.cuts.map((c) => c.after).join(', ')}; ${proxy.requests.length} connections, ${resumed} of the reconnects with a cursor; ${proxy.forwarded} frames forwarded for ${sent.length} events`,
      )
      ctx.note(cmp.summary)
      const failures = [...cmp.problems]
      if (got.cursor !== last) failures.push(`cursor ${got.cursor}, expected ${last}`)
      if (proxy.cuts.length < 2 || mid !== 1)
        failures.push(
          `the faults were not all injected: ${proxy.cuts.length} cuts, ${mid} mid-frame`,
        )
      if (resumed !== proxy.requests.length - 1)
        failures.push(`${proxy.requests.length - 1 - resumed} reconnects without a cursor`)
      const code = await p.stop()
      if (code !== 0) failures.push(`SIGTERM exit code ${code}`)
      return {
        failures,
        figures: `${proxy.cuts.length} cuts (${mid} mid-frame), ${proxy.forwarded} frames, digest ${got.hash}`,
      }
    },
  }
}
