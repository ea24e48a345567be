import { writeFileSync } from 'node:fs'
import { createGenerator, type JetstreamEvent } from '../../../demo-network/generator.ts'

// The traffic every scenario replays: the demo network generator (realistic Letta
// behaviour, anomalies included) with multi-KB records, seeded from the run's seed.

export interface EventSet {
  events: JetstreamEvent[]
  lines: string[]
  lastTimeUs: number
}

export function makeEvents(seed: number, n: number): EventSet {
  const gen = createGenerator({
    seed,
    dids: 20,
    contentBytes: { min: 1024, max: 4096 },
    // 20 ms of source time per event: Jetstream's 5 s reconnect rewind then replays ~250
    // events, not thousands (a cut every ~1,500 events must leave room to progress).
    meanIntervalUs: 20_000,
  })
  const events = gen.generate(n)
  return { events, lines: events.map((e) => JSON.stringify(e)), lastTimeUs: events.at(-1)!.time_us }
}

export function writeLines(file: string, lines: string[]): void {
  writeFileSync(file, `${lines.join('\n')}\n`)
}
