import { fileURLToPath } from 'node:url'
import { loadOrBuildFrames } from '../../helpers/firehose/frames-cache.ts'
import { startPlcStub } from '../../helpers/firehose/plc-stub.ts'
import { spawnNode } from '../../helpers/node-child.ts'
import { COMMON_ENV } from '../lib/baseline.ts'
import { startCli } from '../lib/cli-proc.ts'
import { compareDigests } from '../lib/compare.ts'
import type { ChaosContext } from '../lib/context.ts'
import { startCutProxy } from '../lib/cut-proxy.ts'
import { type DbTarget, type Driver, freshDb } from '../lib/db.ts'
import { type Digest, readDigest } from '../lib/digest.ts'
import { waitCaughtUp } from '../lib/progress.ts'
import type { Scenario } from '../lib/scenario.ts'
import { cutPlan } from './jetstream-cuts.ts'

// A local relay (its own process) replaying real signed commits (test/helpers/firehose/frames.ts:
// secp256k1 keys, MST proofs, #account frames, noise collections) behind the cutting
// proxy: every ~1,500 frames the socket goes, once mid-frame. The verified firehose
// source resumes from its stored seq; the end state must be an uncut one-per-batch run's.
// The frames are built once and cached on disk (node_modules/.cache), so a seed gives the
// same cut points over the same frames on a machine.

const FRAME_SERVER = fileURLToPath(
  new URL('../../helpers/firehose/frame-server-child.ts', import.meta.url),
)

async function startRelay(ctx: ChaosContext, path: string): Promise<string> {
  const child = spawnNode([FRAME_SERVER, path], {})
  ctx.defer('stop the relay', () => child.stop())
  const port = await new Promise<number>((resolve, reject) => {
    child.proc.stdout?.once('data', (d: Buffer) => resolve(Number(d.toString().trim())))
    child.exited.then(() => reject(new Error(`relay exited:\n${child.output.join('')}`)))
  })
  return `ws://127.0.0.1:${port}`
}

export function firehoseCutsScenario(driver: Driver): Scenario {
  return {
    name: `firehose-cuts-${driver}`,
    short: driver === 'postgres',
    injects: `local relay of signed commits behind a proxy cutting every ~1,500 frames (short run: ~600), once mid-frame, on ${driver}`,
    async run(ctx) {
      const frames = ctx.short ? 1_500 : 12_000
      const set = await loadOrBuildFrames(
        {
          frames,
          matchingShare: 0.4,
          noiseRepos: 40,
          lettaDids: 20,
          contentBytes: { min: 2048, max: 12_288 },
        },
        (m) => ctx.note(`frames: ${m}`),
      )
      const plc = await startPlcStub(set.keys)
      ctx.defer('stop the PLC stub', () => plc.close())
      const relay = await startRelay(ctx, set.path)
      const env = { ...COMMON_ENV, PLC_URL: plc.url, ALLOW_PRIVATE_NETWORK: 'true' }
      const run = async (
        db: DbTarget,
        url: string,
        extra: Record<string, string> = {},
      ): Promise<Digest> => {
        const p = startCli(['run', '--source', 'firehose'], {
          ...env,
          ...db.env,
          RELAY_URL: url,
          ...extra,
        })
        ctx.defer('stop the product', () => void p.kill9())
        await p.waitListening()
        await waitCaughtUp(p, set.lastSeq, 600_000)
        const d = await readDigest(p.url()!)
        await p.stop()
        return d
      }
      const fine = await run(await freshDb(ctx, 'postgres'), relay, { BATCH_SIZE: '1' })
      ctx.note(
        `uncut one-per-batch run: ${set.frames.length} frames (${set.matchingFrames} matching), ${fine.records.size} records, ${fine.feed.length} feed rows`,
      )
      const proxy = await startCutProxy(relay, cutPlan(ctx))
      ctx.defer('close the cutting proxy', () => proxy.close())
      const got = await run(await freshDb(ctx, driver), proxy.url)
      const cmp = compareDigests(got, fine, fine.feed)
      const mid = proxy.cuts.filter((c) => c.midFrame).length
      const resumed = proxy.requests.slice(1).filter((q) => /[?&]cursor=\d+/.test(q)).length
      ctx.note(
        `${proxy.cuts.length} cuts (${mid} mid-frame) at frames ${proxy.cuts.map((c) => c.after).join(', ')}; ${proxy.requests.length} connections, ${resumed} reconnects with a cursor`,
      )
      ctx.note(cmp.summary)
      const failures = [...cmp.problems]
      if (got.cursor !== set.lastSeq) failures.push(`cursor ${got.cursor}, expected ${set.lastSeq}`)
      if (proxy.cuts.length < 2 || mid !== 1)
        failures.push(`faults not all injected: ${proxy.cuts.length} cuts, ${mid} mid-frame`)
      if (fine.records.size === 0) failures.push('the uncut run indexed nothing')
      return {
        failures,
        figures: `${proxy.cuts.length} cuts (${mid} mid-frame), ${set.frames.length} frames, digest ${got.hash}`,
      }
    },
  }
}
