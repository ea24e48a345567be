import { loadOrBuildFrames } from '../../test/helpers/firehose/frames-cache.ts'
import { startPlcStub } from '../../test/helpers/firehose/plc-stub.ts'
import { benchEnv } from './env.ts'
import { type FeedChange, FeedTally } from './feed-tally.ts'
import { startPacedRelay } from './paced-relay.ts'
import { sampleTree } from './proc-tree.ts'
import { productReady, spawnProduct } from './product.ts'
import { sleep, summarize } from './stats.ts'
import { NSIDS } from './traffic.ts'

// `prompt-appview run` on Postgres following a relay at the network's rate (SPEC 12): the
// firehose source with chain state as the runtime wires it (every Letta repo tracked once
// it holds a record), commits verified, the rest of the network decoded and dropped. The
// process tree is sampled every second; each Letta write is timed from when the relay
// sent it until the change feed shows it (polled every `pollMs`, so up to that much late).

export interface FollowingOptions {
  databaseUrl: string
  rate: number
  seconds: number
  /** Not counted in CPU or latency: start-up, first DID lookups, JIT. */
  warmupS: number
  pollMs: number
  /** Where `run` writes a CPU profile (--cpu-prof), or null. */
  profileDir?: string | null
  /** Node flags for `run` (BENCH_NODE_FLAGS); the entry adds the shipped ones not given. */
  nodeFlags?: string[]
  log: (msg: string) => void
}

export interface Following {
  framesPerS: number
  lettaSent: number
  cpuCores: number
  hwmMb: number
  rssQuarterMb: number
  rssEndMb: number
  latencyMs: ReturnType<typeof summarize>
  /** Writes sent to an inactive account or in flight when it went inactive: not timed. */
  heldByAccount: number
  /** Writes of the content the feed already showed: nothing to show. */
  unchanged: number
  unobserved: number
  missing: string[]
}

const LETTA_SHARE = 0.04

export async function measureFollowing(o: FollowingOptions): Promise<Following> {
  // Other collections' commits by 2,000 repos, built once and cached.
  const noise = await loadOrBuildFrames(
    {
      frames: 20_000,
      matchingShare: 0,
      noiseRepos: 2000,
      lettaDids: 1,
      contentBytes: benchEnv.contentBytes,
    },
    o.log,
  )
  const tally = new FeedTally()
  let measureFrom = Number.POSITIVE_INFINITY
  const relay = await startPacedRelay({
    noise: noise.frames,
    rate: o.rate,
    lettaShare: LETTA_SHARE,
    lettaDids: 200,
    onLetta: (ev, op, at) => {
      if (ev.kind === 'account') tally.account(ev.did, ev.account.active)
      if (!op || !Object.values(NSIDS).includes(op.collection)) return
      const uri = `at://${op.did}/${op.collection}/${op.rkey}`
      tally.sent(uri, op.op, op.cid ?? undefined, at, at >= measureFrom)
    },
  })
  const plc = await startPlcStub(relay.keys, { handles: false })
  const product = await spawnProduct(
    ['run'],
    {
      DATABASE_URL: o.databaseUrl,
      SOURCE: 'firehose',
      RELAY_URL: relay.url,
      PLC_URL: plc.url,
      ALLOW_PRIVATE_NETWORK: 'true',
      RATE_LIMIT_PER_MINUTE: '10000000',
    },
    [
      ...(o.nodeFlags ?? []),
      ...(o.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${o.profileDir}`] : []),
    ],
  )
  try {
    await productReady(product)
    const feed = { since: 0, polls: 0 }
    const poll = async () => {
      const res = await fetch(`${product.base}/v1/changes?since=${feed.since}&limit=10000`)
      if (res.status !== 200) throw new Error(`/v1/changes: HTTP ${res.status}`)
      const now = Date.now()
      feed.polls++
      for (const line of (await res.text()).split('\n')) {
        if (!line) continue
        const c = JSON.parse(line) as FeedChange
        feed.since = Math.max(feed.since, c.seq)
        tally.seen(c, now)
      }
    }
    const t0 = performance.now()
    const end = t0 + (o.warmupS + o.seconds) * 1000
    let hwmMb = 0
    let rssQuarterMb = 0
    let cpu0: { cpuS: number; at: number; seq: number } | null = null
    let last = sampleTree(product.child.pid)
    let nextSample = 0
    while (performance.now() < end) {
      await poll()
      const now = performance.now()
      if (now >= nextSample) {
        nextSample = now + 1000
        last = sampleTree(product.child.pid)
        hwmMb = Math.max(hwmMb, last.hwmMb)
        const into = (now - t0) / 1000 - o.warmupS
        if (!cpu0 && into >= 0) {
          cpu0 = { cpuS: last.cpuS, at: now, seq: relay.seq() }
          measureFrom = Date.now()
        }
        if (!rssQuarterMb && into >= o.seconds / 4) rssQuarterMb = last.rssMb
      }
      await sleep(o.pollMs)
    }
    const elapsedS = (performance.now() - cpu0!.at) / 1000
    const frames = relay.seq() - cpu0!.seq
    const cpuCores = (last.cpuS - cpu0!.cpuS) / elapsedS
    await relay.stop()
    // What was sent last has had at most a batch and a poll to show; then it is settled.
    const drainEnd = performance.now() + 30_000
    while (tally.unobserved > 0 && performance.now() < drainEnd) {
      await poll()
      await sleep(o.pollMs)
    }
    tally.settleEnd()
    return {
      framesPerS: frames / elapsedS,
      lettaSent: tally.matching,
      cpuCores,
      hwmMb,
      rssQuarterMb,
      rssEndMb: last.rssMb,
      latencyMs: summarize(tally.latencies),
      heldByAccount: tally.heldByAccount,
      unchanged: tally.unchanged,
      unobserved: tally.unobserved,
      missing: tally.missing(10),
    }
  } finally {
    await relay.stop().catch(() => {})
    await product.child.stop()
    await plc.close()
  }
}
