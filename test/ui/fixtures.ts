import { createGenerator } from '../../demo-network/generator.ts'
import { loadConfig } from '../../src/config/config.ts'
import { applyBatch, type IndexerDeps } from '../../src/indexer/apply.ts'
import { normalizeJetstreamEvent } from '../../src/ingest/jetstream/event.ts'
import { timeCursor } from '../../src/model/cursor.ts'
import type { IndexEvent } from '../../src/model/events.ts'
import { apply, NSIDS, World } from '../helpers/events.ts'

// Data for the browser tests: the demo generator's traffic (what `npm run demo` shows),
// indexed through the real core with a cursor, plus one hand-made prompt recompiled three
// times with real content changes so a diff has something to show.

const collections = new Set(Object.values(NSIDS))
// Batches of the size the product applies by default (BATCH_SIZE): a third faster than 200.
const BATCH = loadConfig({}, {}).batchSize

export async function indexDemoTraffic(deps: IndexerDeps, events: number): Promise<void> {
  const startUs = Date.now() * 1000 - 600 * 1e6
  const gen = createGenerator({
    seed: 20261130,
    dids: 24,
    startTimeUs: startUs,
    meanIntervalUs: 50_000,
  })
  const lines = gen.generate(events)
  const batch: IndexEvent[] = []
  for (const line of lines) {
    const r = normalizeJetstreamEvent(line, { collections })
    if (!r.ok || !r.item.event) continue
    const ev = r.item.event
    // The simulated network is its own naming authority, as in `npm run demo`.
    batch.push(ev.kind === 'identity' ? { ...ev, handle: r.unverifiedHandle } : ev)
  }
  const last = lines.at(-1)?.time_us ?? startUs
  for (let i = 0; i < batch.length; i += BATCH) {
    const cursor = {
      source: 'jetstream',
      key: 'ws://127.0.0.1/demo',
      cursor: timeCursor(last),
      lastEventUs: last,
    }
    await applyBatch(deps, batch.slice(i, i + BATCH), i + BATCH >= batch.length ? cursor : null)
  }
}

export const SHOWCASE_DID = 'did:plc:showcaseshowcaseshowcase'
export const SHOWCASE_HANDLE = 'showcase.test'

function persona(n: number): string {
  return `<memory>\npersona: a careful research assistant\nhuman: likes short answers\nfacts learned: ${n}\n</memory>`
}

function content(core: string, tools: string[]): string {
  const rules = Array.from(
    { length: 40 },
    (_, i) => `Rule ${i + 1}: keep answers grounded in the sources you read.`,
  )
  return ['You are Letta, a stateful agent.', ...rules, core, 'Tools:', ...tools, 'Be kind.'].join(
    '\n',
  )
}

/** A prompt of SHOWCASE_DID with four revisions; returns its rkey and revs, oldest first. */
export async function indexShowcase(
  deps: IndexerDeps,
): Promise<{ rkey: string; agentRkey: string; revs: string[] }> {
  const w = new World()
  const { prompt: P, conversation: C, agent: A } = NSIDS
  const rkey = w.tid()
  const agentRkey = w.tid()
  const agent = `at://${SHOWCASE_DID}/${A}/${agentRkey}`
  const revs: string[] = []
  const record = (n: number, tools: string[]) =>
    w.promptRecord(SHOWCASE_DID, rkey, {
      agent,
      coreMemory: persona(n),
      content: content(persona(n), tools),
      memfsRevision: `memfs-${n}`,
    })
  await apply(deps, [
    w.commit({
      did: SHOWCASE_DID,
      collection: A,
      rkey: agentRkey,
      record: {
        $type: A,
        name: 'research assistant',
        system: 'template v1',
      },
    }),
    w.conversation({ did: SHOWCASE_DID, rkey, record: { $type: C, title: 'Reading list' } }),
    { kind: 'identity', did: SHOWCASE_DID, handle: SHOWCASE_HANDLE, seq: 1, timeUs: w.tick() },
  ])
  const steps: Array<[number, string[]]> = [
    [1, ['- search(query)']],
    [2, ['- search(query)', '- open(url)']],
    [3, ['- search(query)', '- open(url)']],
    [4, ['- search(query)', '- open(url)', '- summarize(text)']],
  ]
  for (const [i, [n, tools]] of steps.entries()) {
    const ev = w.commit({
      did: SHOWCASE_DID,
      collection: P,
      rkey,
      op: i === 0 ? 'create' : 'update',
      record: record(n, tools),
    })
    revs.push(ev.rev)
    await apply(deps, [ev])
  }
  return { rkey, agentRkey, revs }
}
