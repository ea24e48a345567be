import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createReplaySource } from '../../src/ingest/replay.ts'
import { timeCursor } from '../../src/model/cursor.ts'
import type { SourceItem } from '../../src/model/events.ts'
import {
  COLLECTIONS,
  captureLogger,
  collectingSink,
  counterValue,
  PROMPT,
  testMetrics,
} from '../helpers/ingest-kit.ts'
import { account, commit, T0 } from '../helpers/jetstream-json.ts'

let dir: string
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'replay-test-'))
})
afterAll(async () => {
  await rm(dir, { recursive: true, force: true })
})

const us = (n: number) => T0 + n * 1000
/** An item's time_us cursor (a cursor of another kind shows as itself, and fails the match). */
const time = (i: SourceItem) => (i.cursor?.kind === 'time_us' ? i.cursor.value : i.cursor)

// Line numbers matter: the log must point the operator at the right line.
const LINES = [
  JSON.stringify(commit(1)), // 1 ok
  '{"did": "did:plc:x", "time_us": 12', // 2 not JSON: no cursor
  JSON.stringify({ ...commit(3), kind: 'weird' }), // 3 unknown kind, time readable
  '', // 4 blank: ignored
  JSON.stringify(commit(5, { collection: 'app.bsky.feed.post' })), // 5 other collection
  JSON.stringify({ ...commit(6), commit: { ...(commit(6).commit as object), record: 7 } }), // 6
  JSON.stringify(account(7)), // 7 ok
  `${JSON.stringify(commit(8, { operation: 'delete' }))}\r`, // 8 ok, CRLF
]

async function writeLines(name: string, lines: string[]): Promise<string> {
  const file = join(dir, name)
  await writeFile(file, `${lines.join('\n')}\n`)
  return file
}

function setup(file: string) {
  const metrics = testMetrics()
  const { logger, logs } = captureLogger()
  const source = createReplaySource({ file, collections: COLLECTIONS, logger, metrics })
  return { metrics, logs, source }
}

describe('replay source', () => {
  it('applies good lines, counts and logs bad ones, and moves the cursor past them', async () => {
    const file = await writeLines('mixed.ndjson', LINES)
    const { metrics, logs, source } = setup(file)
    expect(source.name).toBe('replay')
    expect(source.key).toBe(file)
    const sink = collectingSink()
    await source.run(sink, null, new AbortController().signal)

    expect(sink.items.map((i) => [time(i), i.event?.kind ?? null])).toEqual([
      [us(1), 'commit'],
      [us(3), null],
      [us(5), null],
      [us(6), null],
      [us(7), 'account'],
      [us(8), 'commit'],
    ])
    const skipped = logs.filter((l) => l.msg?.toString().startsWith('skipped bad event'))
    expect(skipped.map((l) => [l.line, l.reason])).toEqual([
      [2, 'invalid_json'],
      [3, 'unknown_kind'],
      [6, 'bad_record'],
    ])
    const err = { source: 'replay', outcome: 'error' }
    expect(await counterValue(metrics, err)).toBe(3)
    expect(await counterValue(metrics, { ...err, collection: PROMPT, op: 'create' })).toBe(1)
    const text = await metrics.registry.getSingleMetricAsString('prompt_appview_events_total')
    expect(text).toContain(
      'prompt_appview_events_total{source="replay",collection="unknown",op="unknown",outcome="error"} 2',
    )
    expect(source.stats).toMatchObject({ lines: 8, pushed: 6, skippedBad: 3 })
  })

  it('resumes after the stored cursor', async () => {
    const file = await writeLines('resume.ndjson', LINES)
    const { source, logs } = setup(file)
    const sink = collectingSink()
    await source.run(sink, timeCursor(us(5)), new AbortController().signal)
    expect(sink.items.map(time)).toEqual([us(6), us(7), us(8)])
    // Line 3 was handled before the cursor; line 2 has no time, so it is reported again.
    expect(logs.filter((l) => l.reason).map((l) => l.line)).toEqual([2, 6])
  })

  it('never moves the cursor backwards on an unsorted file', async () => {
    const file = await writeLines('unsorted.ndjson', [
      JSON.stringify(commit(5)),
      JSON.stringify(commit(3)),
      JSON.stringify(commit(6)),
    ])
    const { source } = setup(file)
    const sink = collectingSink()
    await source.run(sink, null, new AbortController().signal)
    expect(sink.items.map((i) => [time(i), i.timeUs])).toEqual([
      [us(5), us(5)],
      [us(5), us(3)],
      [us(6), us(6)],
    ])
  })

  it('stops promptly on abort, even while the sink is holding a push', async () => {
    const lines = Array.from({ length: 20_000 }, (_, i) => JSON.stringify(commit(i)))
    const file = await writeLines('big.ndjson', lines)
    const { source } = setup(file)
    const sink = collectingSink(5)
    const ac = new AbortController()
    const done = source.run(sink, null, ac.signal)
    await sink.waitFor(10)
    const t = performance.now()
    ac.abort()
    await done
    expect(performance.now() - t).toBeLessThan(500)
    expect(sink.items.length).toBeLessThan(lines.length)
  })

  it('fails when the file does not exist', async () => {
    const { source } = setup(join(dir, 'missing.ndjson'))
    await expect(source.run(collectingSink(), null, new AbortController().signal)).rejects.toThrow(
      /ENOENT/,
    )
  })
})
