import {
  createGenerator,
  type DemoGenerator,
  type JetstreamEvent,
} from '../../demo-network/generator.ts'
import { isSent } from '../../test/helpers/traffic.ts'
import { benchEnv } from './env.ts'

// The benchmarks' traffic: the demo network generator with realistic record sizes. CIDs
// are the generator's cheap ones (parseable CIDv1, not the record's hash): Jetstream hands
// CIDs over as strings, so nothing downstream can tell, and hashing every record would
// make generation, not ingestion, the bottleneck of a large run.

export const NSIDS = {
  prompt: 'xyz.quasigod.lab.letta.compiledPrompt',
  conversation: 'xyz.quasigod.lab.letta.conversation',
  agent: 'xyz.quasigod.lab.letta.agent',
}
export const COLLECTIONS = [NSIDS.prompt, NSIDS.conversation, NSIDS.agent]
const KEPT = new Set(COLLECTIONS)

export interface TrafficOptions {
  seed?: number
  dids: number
  startTimeUs?: number
  meanIntervalUs?: number
  noiseRatio?: number
}

export function benchGenerator(o: TrafficOptions): DemoGenerator {
  return createGenerator({
    seed: o.seed ?? benchEnv.seed,
    dids: o.dids,
    contentBytes: benchEnv.contentBytes,
    startTimeUs: o.startTimeUs ?? 1_764_460_800_000_000,
    meanIntervalUs: o.meanIntervalUs ?? 500,
    noiseRatio: o.noiseRatio ?? 0.2,
    realCids: false,
  })
}

/** A commit of a kept collection: what "matching events" counts. */
export function isMatching(ev: JetstreamEvent): boolean {
  return ev.kind === 'commit' && KEPT.has(ev.commit.collection)
}

/** Bytes of the record a matching event carries (0 for deletes), as UTF-8 JSON. */
export function recordBytes(ev: JetstreamEvent): number {
  return ev.kind === 'commit' && ev.commit.record
    ? Buffer.byteLength(JSON.stringify(ev.commit.record))
    : 0
}

export interface TrafficTally {
  /** Events generated (what a full firehose would have carried). */
  generated: number
  /** Events the Jetstream server sends for the default WANTED_COLLECTIONS. */
  sent: number
  matching: number
  recordBytes: number
  lineBytes: number
  firstUs: number
  lastUs: number
}

export function emptyTally(): TrafficTally {
  return {
    generated: 0,
    sent: 0,
    matching: 0,
    recordBytes: 0,
    lineBytes: 0,
    firstUs: 0,
    lastUs: 0,
  }
}

/** Counts one event; returns its JSON line when the server would send it, else null. */
export function tally(t: TrafficTally, ev: JetstreamEvent): string | null {
  t.generated++
  if (!isSent(ev)) return null
  const line = JSON.stringify(ev)
  t.sent++
  t.lineBytes += Buffer.byteLength(line)
  if (isMatching(ev)) {
    t.matching++
    t.recordBytes += recordBytes(ev)
  }
  if (t.firstUs === 0) t.firstUs = ev.time_us
  t.lastUs = ev.time_us
  return line
}

/** Traffic stamped from now on at `rate` events per second, for a feed that runs in real time. */
export function liveGenerator(dids: number, rate: number): DemoGenerator {
  return benchGenerator({
    dids,
    seed: 31,
    startTimeUs: Date.now() * 1000,
    meanIntervalUs: Math.round(1e6 / rate),
  })
}
