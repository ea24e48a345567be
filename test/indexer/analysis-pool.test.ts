import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { sql } from 'drizzle-orm'
import pino from 'pino'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import type { Database } from '../../src/db/client.ts'
import {
  ANALYSIS_START_AT,
  type AnalysisPool,
  analysisThreadsFor,
  createAnalysisPool,
} from '../../src/indexer/analysis-pool.ts'
import { IngestPipeline } from '../../src/indexer/pipeline.ts'
import type { PreparedCommit } from '../../src/indexer/plan.ts'
import { createReplaySource } from '../../src/ingest/replay.ts'
import { timeCursor } from '../../src/model/cursor.ts'
import type { CommitEvent, IndexEvent, SourceItem } from '../../src/model/events.ts'
import { analyzePrompt, PromptValidator } from '../../src/model/prompt-record.ts'
import { testContext } from '../helpers/context.ts'
import { createTestDatabase } from '../helpers/db.ts'
import { NSIDS, World } from '../helpers/events.ts'
import {
  expectSameEndState,
  ingestToEnd,
  stateDigest,
  testRuntime,
} from '../helpers/restart-kit.ts'
import { testTraffic } from '../helpers/traffic.ts'

// Prompt analysis on a worker thread (indexer/analysis-pool.ts). It may only ever save
// work: the facts it hands back are the main thread's, a pipeline with it stores exactly
// what one without stores, and a worker that fails or dies costs no prompt (each is then
// analyzed by its batch), with the failure logged.

function capturingLogger() {
  const lines: Array<Record<string, unknown>> = []
  const stream = new Writable({
    write(chunk, _enc, cb) {
      lines.push(JSON.parse(String(chunk)))
      cb()
    },
  })
  return { logger: pino({ level: 'info' }, stream), lines }
}

/** Prompts of every kind the indexer meets, with conversations, agents and deletes. */
function traffic(w: World, dids: string[]): IndexEvent[] {
  const events: IndexEvent[] = []
  for (const did of dids) {
    const rkeys = [w.tid(), w.tid(), w.tid()]
    events.push(w.agent({ did, rkey: 'agentrkey', system: 'template v1' }))
    for (const rkey of rkeys) {
      events.push(w.conversation({ did, rkey }))
      events.push(w.prompt({ did, rkey }))
    }
    const [a, b, c] = rkeys
    events.push(w.prompt({ did, rkey: a, op: 'update', fields: { content: 'recompiled ünï 🧠' } }))
    events.push(w.prompt({ did, rkey: b, fields: { compiledAt: 'not a date', content: 7 } }))
    events.push(
      w.commit({ did, collection: NSIDS.prompt, rkey: w.tid(), record: ['not', 'an object'] }),
    )
    events.push(
      w.prompt({ did, rkey: c, op: 'update', fields: { content: `big\n${'x'.repeat(250_000)}` } }),
    )
    events.push(w.prompt({ did, rkey: a, op: 'delete' }))
  }
  return events
}

const isPromptWrite = (e: IndexEvent): e is PreparedCommit =>
  e.kind === 'commit' && e.collection === NSIDS.prompt && e.op !== 'delete'

describe('the analysis pool', () => {
  it('hands back the facts the main thread would have found', async () => {
    const validator = new PromptValidator(NSIDS.prompt)
    const { logger } = capturingLogger()
    const pool = createAnalysisPool({ threads: 1, nsids: NSIDS, validator, logger, startAt: 0 })
    try {
      const events = traffic(new World(), ['did:plc:analysisfactsaaaaaaaaaa']).filter(isPromptWrite)
      const prepared = await Promise.all(events.map((e) => pool.prepare(e, 0)))
      const inline = new PromptValidator(NSIDS.prompt)
      for (const [i, e] of events.entries()) {
        expect(prepared[i]).not.toBe(e)
        const { analysis, ...event } = prepared[i]
        expect(event).toEqual(e)
        expect(analysis).toEqual(analyzePrompt(inline, NSIDS, e.did, e.rkey, e.record))
      }
    } finally {
      await pool.close()
    }
  })

  it('stops starting workers that die as they start, and analyzes here instead', async () => {
    const { logger, lines } = capturingLogger()
    const validator = new PromptValidator(NSIDS.prompt)
    const pool = createAnalysisPool({
      threads: 1,
      nsids: NSIDS,
      validator,
      logger,
      workerUrl: new URL('../fixtures/broken-worker.ts', import.meta.url),
      startAt: 0,
    })
    try {
      await vi.waitFor(
        () => expect(lines.some((l) => /keep dying/.test(String(l.msg)))).toBe(true),
        { timeout: 20_000, interval: 50 },
      )
      const w = new World()
      const ev = w.prompt({ did: 'did:plc:analysisbrokenaaaaaaaaa', rkey: w.tid() }) as CommitEvent
      // At once, analyzed on this thread.
      const prepared = pool.prepare(ev, 0) as PreparedCommit
      expect(prepared).not.toBeInstanceOf(Promise)
      expect(prepared.analysis).toEqual(
        analyzePrompt(new PromptValidator(NSIDS.prompt), NSIDS, ev.did, ev.rkey, ev.record),
      )
    } finally {
      await pool.close()
    }
  })

  it('starts its workers only once the queue holds startAt events, and analyzes here till then', async () => {
    const { logger, lines } = capturingLogger()
    const pool = createAnalysisPool({
      threads: 1,
      nsids: NSIDS,
      validator: new PromptValidator(NSIDS.prompt),
      logger,
    })
    try {
      const w = new World()
      const ev = () => w.prompt({ did: 'did:plc:analysislazyaaaaaaaaaaa', rkey: w.tid() })
      const first = pool.prepare(ev(), ANALYSIS_START_AT - 1)
      expect(first).not.toBeInstanceOf(Promise)
      expect((first as PreparedCommit).analysis).toBeDefined()
      expect(pool.started).toBe(false)
      const behind = pool.prepare<PreparedCommit>(ev(), ANALYSIS_START_AT)
      expect(pool.started).toBe(true)
      expect(behind).toBeInstanceOf(Promise)
      expect((await behind).analysis).toBeDefined()
      expect(lines.some((l) => l.msg === 'analysis workers started: ingest is behind')).toBe(true)
    } finally {
      await pool.close()
    }
  })

  it('answers what is pending when closed, and prepares nothing after', async () => {
    const { logger } = capturingLogger()
    const pool = createAnalysisPool({
      threads: 1,
      nsids: NSIDS,
      validator: new PromptValidator(NSIDS.prompt),
      logger,
      workerUrl: new URL('../fixtures/silent-analysis-worker.ts', import.meta.url),
      startAt: 0,
    })
    const w = new World()
    const pending = pool.prepare<PreparedCommit>(
      w.prompt({ did: 'did:plc:analysiscloseaaaaaaaaaa', rkey: w.tid() }),
      0,
    )
    expect(pending).toBeInstanceOf(Promise)
    await pool.close()
    // The silent worker never answered: the event comes back as it went, for its batch.
    expect((await pending).analysis).toBeUndefined()
    const late = w.prompt({ did: 'did:plc:analysiscloseaaaaaaaaaa', rkey: w.tid() })
    expect(pool.prepare(late, 0)).toBe(late)
  })
})

describe('a pipeline analyzing on a worker', () => {
  const dbs: Database[] = []
  beforeAll(async () => {
    for (let i = 0; i < 4; i++) dbs.push(await createTestDatabase())
  })
  afterAll(async () => Promise.all(dbs.map((d) => d.close())))

  const dids = ['did:plc:analysispipeaaaaaaaaaaa', 'did:plc:analysispipebbbbbbbbbbb']
  const events = traffic(new World(), dids)

  async function run(
    db: Database,
    analysis: (ctx: ReturnType<typeof testContext>) => AnalysisPool | null,
  ) {
    const ctx = testContext(db)
    const pool = analysis(ctx)
    const p = new IngestPipeline(ctx, {
      source: 'replay',
      provenance: 'replay',
      key: 'analysis',
      batchSize: 7,
      batchDelayMs: 1,
      queueSize: 1000,
      analysis: pool,
    })
    const done = p.run()
    let cursor = 0
    for (const event of events)
      await p.push({
        event,
        cursor: timeCursor(++cursor),
        timeUs: cursor,
        bytes: 100,
      } satisfies SourceItem)
    p.stop()
    await done
    await pool?.close()
    // What the change log last said of each prompt, not how many rows it took: that depends
    // on where batches were cut, which is timing.
    return db.rows(sql`SELECT did, rkey, rev, cid, record, list_record, deleted, flags, base_flags,
        validation_error, content_bytes, content_hash, raw_system_hash, compiled_us, evidence,
        recompiles, search_vector::text AS words,
        (SELECT count(*)::int FROM prompt_revisions r WHERE r.did = p.did AND r.rkey = p.rkey) AS revisions,
        emitted_cid, emitted_flags, emitted_visible
      FROM prompts p ORDER BY did, rkey`)
  }

  const pool = (workerUrl?: URL, logger?: pino.Logger) => (ctx: ReturnType<typeof testContext>) =>
    createAnalysisPool({ ...ctx, logger: logger ?? ctx.logger, threads: 1, workerUrl, startAt: 0 })

  it('stores what a pipeline without one stores, and when its worker dies or fails too', async () => {
    const reference = await run(dbs[0], () => null)
    expect(reference.length).toBeGreaterThan(6)
    expect(await run(dbs[1], pool())).toEqual(reference)

    const died = capturingLogger()
    expect(
      await run(
        dbs[2],
        pool(new URL('../fixtures/crashing-analysis-worker.ts', import.meta.url), died.logger),
      ),
    ).toEqual(reference)
    expect(died.lines.some((l) => /analysis worker died/.test(String(l.msg)))).toBe(true)

    const failed = capturingLogger()
    expect(
      await run(
        dbs[3],
        pool(new URL('../fixtures/failing-analysis-worker.ts', import.meta.url), failed.logger),
      ),
    ).toEqual(reference)
    expect(failed.lines.filter((l) => l.msg === 'analysis worker failed').length).toBe(
      events.filter(isPromptWrite).length,
    )
  })
})

describe('ANALYSIS_THREADS=auto', () => {
  it('is one worker on embedded PGlite with a second core, and none otherwise', () => {
    expect(analysisThreadsFor('auto', 'pglite', 2)).toBe(1)
    expect(analysisThreadsFor('auto', 'pglite', 64)).toBe(1)
    expect(analysisThreadsFor('auto', 'pglite', 1)).toBe(0)
    expect(analysisThreadsFor('auto', 'postgres', 2)).toBe(0)
    expect(analysisThreadsFor('auto', 'postgres', 64)).toBe(0)
    // A small box's memory limit (a cgroup's, as Node reads it): no worker heap to OOM on.
    expect(analysisThreadsFor('auto', 'pglite', 2, 384 << 20)).toBe(0)
    expect(analysisThreadsFor('auto', 'pglite', 2, 2 ** 31)).toBe(1)
    expect(analysisThreadsFor('auto', 'pglite', 2, 0)).toBe(1) // no limit known
    expect(analysisThreadsFor(1, 'pglite', 2, 384 << 20)).toBe(1) // asked for: given
    // A number is taken as it is.
    expect(analysisThreadsFor(0, 'pglite', 8)).toBe(0)
    expect(analysisThreadsFor(3, 'postgres', 1)).toBe(3)
  })
})

describe('ANALYSIS_THREADS=1, through the runtime', () => {
  const dbs: Database[] = []
  let dir: string
  beforeAll(async () => {
    dbs.push(await createTestDatabase(), await createTestDatabase())
    dir = await mkdtemp(join(tmpdir(), 'analysis-'))
  })
  afterAll(async () => {
    await Promise.all(dbs.map((d) => d.close()))
    await rm(dir, { recursive: true, force: true })
  })

  it('ends where the main thread alone ends', async () => {
    const file = join(dir, 'traffic.ndjson')
    const lines = testTraffic({ seed: 41, dids: 5 })
      .generate(300)
      .map((e) => JSON.stringify(e))
    await writeFile(file, `${lines.join('\n')}\n`)
    const digests = []
    // The reference writes one event per batch, so its change log holds every intermediate
    // change (expectSameEndState): where batches are cut is timing, and bigger batches fold.
    for (const [db, env] of [
      [dbs[0], { ANALYSIS_THREADS: '0', BATCH_SIZE: '1' }],
      [dbs[1], { ANALYSIS_THREADS: '1' }],
    ] as const) {
      const rt = testRuntime(db, env)
      const { logger, metrics } = rt.ctx
      const source = createReplaySource({
        file,
        collections: Object.values(NSIDS),
        logger,
        metrics,
      })
      const handle = await ingestToEnd(rt, source)
      expect(handle.pipeline.committedEvents).toBeGreaterThan(100)
      digests.push(await stateDigest(db))
      await rt.close()
    }
    expectSameEndState(digests[1], digests[0])
  })
})
