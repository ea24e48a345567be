import { startJetstreamServer } from '../../demo-network/jetstream-server.ts'
import { demoDictionary, startJetstreamV2Server } from '../../demo-network/jetstream-v2-server.ts'
import {
  benchGenerator,
  emptyTally,
  type TrafficOptions,
  type TrafficTally,
  tally,
} from './traffic.ts'

// A local Jetstream in its own process, loaded with pre-generated traffic before anyone
// connects: generating and sending then cost the indexer under test nothing but reading.
// The parent (feeder.ts) talks to it over IPC.

export interface FeederRequest extends TrafficOptions {
  /** Events to generate (before the server's collection filter). */
  events: number
  /** Generated-event counts at which to report a tally (subsets for the baselines). */
  cuts: number[]
  /** The Jetstream wire to serve (default v1); v2 frames are zstd-compressed at load. */
  wire?: 'v1' | 'v2'
}

export interface FeederReady {
  type: 'ready'
  url: string
  total: TrafficTally
  cuts: TrafficTally[]
}

process.on('message', async (msg: { type: string; request?: FeederRequest }) => {
  if (msg.type === 'close') {
    process.exit(0)
  }
  if (msg.type !== 'start' || !msg.request) return
  const req = msg.request
  const gen = benchGenerator(req)
  const total = emptyTally()
  const cuts: TrafficTally[] = []
  const wantCuts = [...req.cuts].sort((a, b) => a - b)
  const lines: string[] = []
  for (let i = 0; i < req.events; i++) {
    const line = tally(total, gen.next())
    if (line !== null) lines.push(line)
    while (wantCuts.length > 0 && total.generated >= wantCuts[0]) {
      wantCuts.shift()
      cuts.push({ ...total })
    }
  }
  let url: string
  if (req.wire === 'v2') {
    const v2 = await startJetstreamV2Server({ dictionary: demoDictionary(), precompress: true })
    v2.append(lines)
    url = v2.url
  } else {
    url = (await startJetstreamServer({ events: lines })).url
  }
  lines.length = 0
  process.send?.({ type: 'ready', url, total, cuts } satisfies FeederReady)
})
