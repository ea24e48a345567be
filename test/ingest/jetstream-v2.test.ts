import { describe, expect, it } from 'vitest'
import { JetstreamConfigError } from '../../src/ingest/jetstream/v2.ts'
import { seqCursor, timeCursor } from '../../src/model/cursor.ts'
import type { SourceItem } from '../../src/model/events.ts'
import { counterValue, PROMPT, until } from '../helpers/ingest-kit.ts'
import {
  account,
  commit,
  DID,
  identity,
  tid,
  v2Delete,
  v2Frame,
} from '../helpers/jetstream-json.ts'
import {
  bytes,
  DICTIONARY,
  faults,
  OTHER_DICTIONARY,
  v2Server,
  v2Setup,
} from '../helpers/jetstream-v2-kit.ts'

// The v2 source against a local Jetstream v2 on port 0 (real websocket, real zstd): the
// note's cases 2-4 and 7-9 (notes/jetstream-v2.md), and every bad input of issue 12 that
// happens on the wire. The database side (#sync, duplicates, filters) is in test/e2e.

/** The items' seq cursors (a cursor of another kind shows as itself, and fails the match). */
const seqs = (items: SourceItem[]) =>
  items.map((i) => (i.cursor?.kind === 'seq' ? i.cursor.value : i.cursor))

describe('Jetstream v2 source: cursors', () => {
  it('resumes inclusively: the first event (seq N) is dropped and the cursor stays', async () => {
    const s = await v2Server()
    s.append([commit(1), commit(2), commit(3), commit(4)])
    const t = v2Setup(s.url, { zstd: false })
    void t.start(seqCursor(2))
    await t.sink.waitFor(2)
    expect(s.requests[0].params.get('cursor')).toBe('2')
    expect(s.requests[0].params.getAll('collections')).toEqual(['xyz.quasigod.lab.letta.*'])
    expect(s.requests[0].params.has('kinds')).toBe(false)
    expect(seqs(t.sink.items)).toEqual([3, 4])
    expect(t.source.lastSeq).toBe(4)
  })

  it('a hostile frame with a huge seq is refused as the cursor and never becomes the reconnect cursor', async () => {
    const s = await v2Server()
    const t = v2Setup(s.url, { zstd: false })
    void t.start(null)
    await until(() => s.connections === 1)
    s.append([commit(1)])
    s.appendRaw([v2Frame('commit', { seq: 1_000_000_000_000, ...v2Delete(9) })])
    await t.sink.waitFor(2)
    expect(seqs(t.sink.items)).toEqual([1, null])
    expect(t.source.lastSeq).toBe(1)
    s.closeGoingAway()
    await until(() => s.requests.length === 2)
    expect(s.requests[1].params.get('cursor')).toBe('1')
  })

  it('CursorTooOld with the default stops once: counted, logged with the backfill command, reported', async () => {
    const s = await v2Server()
    s.append([commit(1), commit(2)])
    s.floor = 50
    const t = v2Setup(s.url, { zstd: false })
    await t.start(seqCursor(7)) // resolves: the source stopped instead of looping
    expect(s.requests).toHaveLength(1)
    expect(await faults(t.metrics, 'cursor_too_old')).toBe(1)
    expect(await counterValue(t.metrics, { source: 'jetstream' }, 'resumeGapsTotal')).toBe(1)
    const logged = t.logs.filter((l) => String(l.msg).includes('CursorTooOld'))
    expect(logged).toHaveLength(1)
    expect(String(logged[0].msg)).toContain('prompt-appview backfill')
    expect(String(logged[0].msg)).toContain('JETSTREAM_ON_TOO_OLD=tip')
    expect(t.source.gap).toMatchObject({ reason: 'CursorTooOld', cursor: 7 })
    expect(t.source.gap?.message).toContain('below lookback floor 50')
  })

  it('CursorTooOld with JETSTREAM_ON_TOO_OLD=tip goes on from the live tip, once', async () => {
    const s = await v2Server()
    s.append([commit(1), commit(2)])
    s.floor = 50
    const t = v2Setup(s.url, { zstd: false, onTooOld: 'tip' })
    void t.start(seqCursor(7))
    await until(() => s.connections === 1)
    s.append([commit(3)])
    await t.sink.waitFor(1)
    expect(s.requests.map((r) => r.params.get('cursor'))).toEqual(['7', null])
    expect(seqs(t.sink.items)).toEqual([3])
    expect(await faults(t.metrics, 'cursor_too_old')).toBe(1)
    expect(t.source.gap?.reason).toBe('CursorTooOld')
  })

  it('a timestamp cursor below the window gets #info OutdatedCursor: a counted, logged gap', async () => {
    const s = await v2Server({ maxLogEvents: 2 })
    s.append([commit(1), commit(2), commit(3), commit(4), commit(5)])
    s.floor = 4
    const t = v2Setup(s.url, { zstd: false })
    void t.start(timeCursor(commit(1).time_us))
    await t.sink.waitFor(2)
    expect(seqs(t.sink.items)).toEqual([4, 5])
    expect(await faults(t.metrics, 'outdated_cursor')).toBe(1)
    expect(t.source.gap).toMatchObject({ reason: 'OutdatedCursor' })
    expect(t.logs.some((l) => String(l.msg).includes('retention floor'))).toBe(true)
  })
})

describe('Jetstream v2 source: reconnects', () => {
  it('ConsumerTooSlow then a drop: reconnects from the stored cursor', async () => {
    const s = await v2Server()
    s.append([commit(1), commit(2)])
    const t = v2Setup(s.url, { zstd: false })
    void t.start(null)
    await until(() => s.connections === 1)
    s.append([commit(3), commit(4)])
    await t.sink.waitFor(2)
    s.sendError('ConsumerTooSlow', 'reading below the floor rate; resume from cursor 4')
    await until(() => s.requests.length === 2)
    expect(s.requests[1].params.get('cursor')).toBe('4')
    s.append([commit(5)])
    await t.sink.waitFor(3)
    expect(seqs(t.sink.items)).toEqual([3, 4, 5])
    expect(await faults(t.metrics, 'consumer_too_slow')).toBe(1)
  })

  it('InternalError, 1001, a 503 and a 400 with an unknown name each reconnect with backoff', async () => {
    const s = await v2Server()
    const t = v2Setup(s.url, { zstd: false })
    void t.start(null)
    await until(() => s.connections === 1)
    s.sendError('InternalError', 'archive read failed; reconnect')
    await until(() => s.requests.length === 2 && s.connections === 1)
    s.rejectNext(
      { status: 503, error: 'ServiceUnavailable' },
      { status: 400, error: 'Teapot', message: 'x' },
    )
    s.closeGoingAway()
    await until(() => s.requests.length === 5 && s.connections === 1)
    s.append([commit(1)])
    await t.sink.waitFor(1)
    for (const reason of ['internal_error', 'going_away', 'unavailable', 'refused_unknown'])
      expect(await faults(t.metrics, reason), reason).toBe(1)
    expect(t.logs.some((l) => l.error === 'Teapot')).toBe(true)
    expect(await counterValue(t.metrics, { source: 'jetstream' }, 'sourceReconnectsTotal')).toBe(4)
  })

  it('a server that accepts the upgrade and never sends is cut and reconnected', async () => {
    const s = await v2Server()
    s.mute = true
    const t = v2Setup(s.url, { zstd: false, idleTimeoutMs: 200, heartbeatMs: 50 })
    void t.start(null)
    await until(() => s.requests.length >= 2, 5000)
    expect(await faults(t.metrics, 'idle')).toBeGreaterThanOrEqual(1)
    s.mute = false
    await until(() => s.connections > 0 && s.requests.at(-1)!.status === 101)
    await until(async () => {
      s.append([commit(s.requests.length + 10)])
      return t.sink.items.length > 0
    })
  })

  it('a v1 parameter in the URL: 400 InvalidRequest is a configuration error, not a retry', async () => {
    const s = await v2Server()
    const t = v2Setup(`${s.url}?wantedCollections=${PROMPT}`, { zstd: false })
    await expect(t.start(null)).rejects.toThrow(JetstreamConfigError)
    await expect(v2Setup(`${s.url}?wantedCollections=x`).start(null)).rejects.toThrow(
      /wantedCollections/,
    )
    expect(s.requests.filter((r) => r.status === 400)).toHaveLength(2)
  })
})

describe('Jetstream v2 source: bad frames', () => {
  it('counts and skips junk, keeps going, and never moves the cursor backwards', async () => {
    const s = await v2Server()
    const t = v2Setup(s.url, { zstd: false })
    void t.start(null)
    await until(() => s.connections === 1)
    s.append([commit(1)])
    s.appendRaw([
      'not json {',
      JSON.stringify({ $type: 'message' }),
      v2Frame('commit', v2Delete(9)),
      v2Frame('commit', { seq: 2, ...v2Delete(9), rev: undefined }),
      v2Frame('sync', {
        seq: 3,
        sync: { did: DID, rev: tid(9), blocks: { $bytes: 'not*base64!' } },
      }),
      v2Frame('labels', { seq: 4 }),
      v2Frame('commit', { seq: 1, ...v2Delete(8) }),
    ])
    s.append([commit(20)])
    await until(() => t.sink.items.some((i) => i.cursor?.value === 5), 5000)
    // seq 1 (commit), 2..4 (skipped but readable: the cursor moves), 5 (commit(20)).
    expect(seqs(t.sink.items)).toEqual([1, 2, 3, 4, 5])
    expect(t.sink.items.map((i) => i.event?.kind ?? null)).toEqual([
      'commit',
      null,
      null,
      null,
      'commit',
    ])
    expect(await faults(t.metrics, 'unknown_type')).toBe(1)
    expect(await faults(t.metrics, 'seq_backwards')).toBe(1)
    const reasons = t.logs.map((l) => l.reason).filter(Boolean)
    for (const r of ['invalid_json', 'missing_field', 'bad_bytes']) expect(reasons).toContain(r)
    expect(t.logs.some((l) => String(l.msg).includes('missing seq'))).toBe(true)
    expect(t.logs.some((l) => String(l.msg).includes('missing commit.rev'))).toBe(true)
    expect(t.logs.some((l) => String(l.msg).includes('message without payload'))).toBe(true)
  })
})

describe('Jetstream v2 source: dictionary zstd', () => {
  it('fetches the dictionary, checks its ID, asks for it, decodes binary frames, and reports bytes', async () => {
    const s = await v2Server({ dictionary: DICTIONARY })
    s.append([commit(1), account(2), identity(3)])
    const t = v2Setup(s.url)
    void t.start(seqCursor(0))
    await t.sink.waitFor(3)
    expect(s.requests[0].params.get('zstdDictionary')).toBe('20261201')
    expect(t.sink.items.map((i) => i.event?.kind)).toEqual(['commit', 'account', 'identity'])
    expect(s.counters.wireBytes).toBeLessThan(s.counters.textBytes)
    expect(await bytes(t.metrics, 'wire')).toBe(s.counters.wireBytes)
    expect(await bytes(t.metrics, 'decoded')).toBe(s.counters.textBytes)
  })

  it('a stop during the dictionary fetch ends the source at once, without opening a session', async () => {
    const s = await v2Server({ dictionary: DICTIONARY })
    let fetching!: () => void
    const fetchStarted = new Promise<void>((resolve) => {
      fetching = resolve
    })
    const t = v2Setup(s.url, {
      fetch: async (input, init) => {
        fetching()
        await new Promise((resolve) => setTimeout(resolve, 200))
        return fetch(input, init)
      },
    })
    const done = t.start(seqCursor(0))
    await fetchStarted
    t.ac.abort()
    const t0 = Date.now()
    await done
    // Before, the session opened after the stop and ran out its 120 s idle timeout.
    expect(Date.now() - t0).toBeLessThan(5_000)
    expect(s.requests).toEqual([])
  })

  it('UnknownZstdDictionary: one refetch, then the new dictionary', async () => {
    const s = await v2Server({ dictionary: DICTIONARY })
    const t = v2Setup(s.url)
    void t.start(null)
    await until(() => s.connections === 1)
    s.setDictionary(OTHER_DICTIONARY)
    s.dropConnections()
    await until(() => s.connections === 1 && s.requests.length === 3)
    expect(s.requests.map((r) => [r.status, r.params.get('zstdDictionary')])).toEqual([
      [101, '20261201'],
      [400, '20261201'],
      [101, '20261202'],
    ])
    expect(t.fetches()).toBe(2)
    s.append([commit(1)])
    await t.sink.waitFor(1)
    expect(await faults(t.metrics, 'zstd_dictionary_unknown')).toBe(1)
  })

  it('frames made with another dictionary are refused loudly, then read after a refetch', async () => {
    const s = await v2Server({ dictionary: DICTIONARY })
    const t = v2Setup(s.url)
    void t.start(seqCursor(0))
    await until(() => s.connections === 1)
    s.setDictionary(OTHER_DICTIONARY, true)
    // Nothing was read yet: the cursor 0 it started from replays seq 1 after the refetch.
    s.append([commit(1)])
    await t.sink.waitFor(1)
    expect(t.sink.items[0].event).toMatchObject({ kind: 'commit', rkey: tid(1) })
    expect(await faults(t.metrics, 'zstd_dictionary')).toBe(1)
    expect(s.requests.at(-1)!.params.get('zstdDictionary')).toBe('20261202')
  })

  it('a frame decoding past the cap is counted and skipped; the next one is read', async () => {
    const s = await v2Server({ dictionary: DICTIONARY })
    const t = v2Setup(s.url, { maxDecodedBytes: 2000 })
    void t.start(null)
    await until(() => s.connections === 1)
    s.append([commit(1, { record: { $type: PROMPT, content: 'x'.repeat(5000) } }), commit(2)])
    await t.sink.waitFor(1)
    expect(seqs(t.sink.items)).toEqual([2])
    expect(await faults(t.metrics, 'zstd_cap')).toBe(1)
  })

  it('no dictionary to be had: text frames', async () => {
    const s = await v2Server()
    const t = v2Setup(s.url)
    void t.start(null)
    await until(() => s.connections === 1)
    expect(s.requests[0].params.has('zstdDictionary')).toBe(false)
    expect(await faults(t.metrics, 'zstd_dictionary_fetch')).toBe(1)
    s.append([commit(1)])
    await t.sink.waitFor(1)
  })
})
