import {
  createGenerator,
  type DemoGenerator,
  type GeneratorInput,
  type JetstreamEvent,
} from '../../demo-network/generator.ts'

/**
 * Demo traffic the way most tests want it: small records (1 to 2 KiB) and made-up CIDs, both
 * for speed; with `agoSeconds`, the stream starts that long before now, so no event is ahead
 * of the clock (the cursor guard refuses those).
 */
export function testTraffic(
  o: GeneratorInput & { seed: number; dids: number; agoSeconds?: number },
): DemoGenerator {
  const { agoSeconds, ...input } = o
  return createGenerator({
    contentBytes: { min: 1024, max: 2048 },
    realCids: false,
    ...(agoSeconds === undefined ? {} : { startTimeUs: Date.now() * 1000 - agoSeconds * 1e6 }),
    ...input,
  })
}

/**
 * True for events a Jetstream asked for the default WANTED_COLLECTIONS sends (account and
 * identity always go).
 */
export function isSent(ev: JetstreamEvent): boolean {
  return ev.kind !== 'commit' || ev.commit.collection.startsWith('xyz.quasigod.lab.letta.')
}
