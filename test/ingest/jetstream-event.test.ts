import { describe, expect, it } from 'vitest'
import { normalizeJetstreamEvent } from '../../src/ingest/jetstream/event.ts'
import { type NormalizeResult, recordSkip } from '../../src/ingest/jetstream/skip.ts'
import { timeCursor } from '../../src/model/cursor.ts'
import {
  COLLECTIONS,
  captureLogger,
  counterValue,
  PROMPT,
  testMetrics,
} from '../helpers/ingest-kit.ts'
import { account, CID, commit, DID, identity, T0, tid } from '../helpers/jetstream-json.ts'

const opts = { collections: new Set(COLLECTIONS) }
const norm = (v: unknown) =>
  normalizeJetstreamEvent(typeof v === 'string' ? v : JSON.stringify(v), opts)
const skip = (r: NormalizeResult) => {
  if (r.ok) throw new Error(`expected a skip, got ${JSON.stringify(r)}`)
  return r
}

function withCommit(n: number, patch: Record<string, unknown>) {
  const e = commit(n)
  return { ...e, commit: { ...(e.commit as object), ...patch } }
}

describe('normalizeJetstreamEvent', () => {
  it('normalizes create, update and delete commits', () => {
    const r = norm(commit(1))
    expect(r).toEqual({
      ok: true,
      unverifiedHandle: null,
      sanitized: false,
      item: {
        cursor: timeCursor(T0 + 1000),
        timeUs: T0 + 1000,
        event: {
          kind: 'commit',
          did: DID,
          collection: PROMPT,
          rkey: tid(1),
          rev: tid(1),
          op: 'create',
          cid: CID,
          record: { $type: PROMPT, n: 1 },
          timeUs: T0 + 1000,
        },
      },
    })
    const u = norm(commit(2, { operation: 'update' }))
    expect(u.ok && u.item.event).toMatchObject({ op: 'update', cid: CID })
    const d = norm(commit(3, { operation: 'delete' }))
    expect(d.ok && d.item.event).toMatchObject({ op: 'delete', cid: null, record: null })
  })

  it('normalizes account events', () => {
    const r = norm(account(1))
    expect(r.ok && r.item.event).toEqual({
      kind: 'account',
      did: DID,
      active: false,
      status: 'takendown',
      seq: 101,
      timeUs: T0 + 1000,
    })
    const a = norm(account(2, { active: true, status: null }))
    expect(a.ok && a.item.event).toMatchObject({ active: true, status: null })
    const noStatus = {
      ...account(3, { active: true }),
      account: { active: true, did: DID, seq: 5 },
    }
    const b = norm(noStatus)
    expect(b.ok && b.item.event).toMatchObject({ active: true, status: null, seq: 5 })
  })

  it('keeps identity handles unverified', () => {
    const r = norm(identity(1))
    expect(r.ok).toBe(true)
    if (!r.ok) return
    expect(r.item.event).toEqual({
      kind: 'identity',
      did: DID,
      handle: null,
      seq: 101,
      timeUs: T0 + 1000,
    })
    expect(r.unverifiedHandle).toBe('ada.example.com')
    const bad = norm(identity(2, { handle: 'not a handle' }))
    expect(bad.ok && bad.unverifiedHandle).toBe(null)
  })

  it('moves the cursor past collections we do not keep, without an error', () => {
    const r = norm(commit(4, { collection: 'app.bsky.feed.post' }))
    expect(r).toMatchObject({ ok: true, item: { event: null, cursor: timeCursor(T0 + 4000) } })
  })

  it('takes already parsed objects', () => {
    expect(normalizeJetstreamEvent(commit(1), opts).ok).toBe(true)
  })

  it('replaces U+0000 and lone surrogates in records, keys included', () => {
    const record = {
      $type: PROMPT,
      text: 'a\u0000b',
      nested: [{ 'k\u0000': '\ud800x' }],
      ok: 'fine',
    }
    const r = norm(withCommit(5, { record }))
    expect(r.ok).toBe(true)
    if (!r.ok || r.item.event?.kind !== 'commit') return
    expect(r.sanitized).toBe(true)
    expect(r.item.event.record).toEqual({
      $type: PROMPT,
      text: 'a\uFFFDb',
      nested: [{ 'k\uFFFD': '\uFFFDx' }],
      ok: 'fine',
    })
    expect(record.text).toBe('a\u0000b') // the input is not mutated
  })

  const at = T0 + 7000
  const cases: Array<[string, unknown, string, Partial<ReturnType<typeof skip>>]> = [
    ['not JSON', '{"did":', 'invalid_json', { collection: 'unknown', op: 'unknown' }],
    ['an array', '[1,2]', 'not_object', {}],
    ['null', 'null', 'not_object', {}],
    ['an unknown kind', { ...commit(7), kind: 'nope' }, 'unknown_kind', { timeUs: at }],
    ['no kind', { did: DID, time_us: at }, 'unknown_kind', { timeUs: at }],
    ['no commit', { did: DID, time_us: at, kind: 'commit' }, 'missing_field', { timeUs: at }],
    ['no time_us', { ...commit(7), time_us: undefined }, 'missing_field', { collection: PROMPT }],
    ['a bad time_us', { ...commit(7), time_us: 'soon' }, 'bad_field', { op: 'create' }],
    // Without a DID the line's time_us cannot be trusted: no timeUs, so it moves no cursor.
    [
      'no did',
      { ...commit(7), did: undefined },
      'missing_field',
      { timeUs: undefined, op: 'create' },
    ],
    [
      'a bad did',
      { ...commit(7), did: 'did:nope' },
      'bad_did',
      { timeUs: undefined, collection: PROMPT },
    ],
    ['no rev', withCommit(7, { rev: undefined }), 'missing_field', { timeUs: at }],
    ['a rev that is not a TID', withCommit(7, { rev: 'zzz' }), 'bad_rev', { timeUs: at }],
    ['no operation', withCommit(7, { operation: undefined }), 'missing_field', { op: 'unknown' }],
    ['a bad operation', withCommit(7, { operation: 'upsert' }), 'bad_field', { op: 'unknown' }],
    [
      'no collection',
      withCommit(7, { collection: undefined }),
      'missing_field',
      { collection: 'unknown' },
    ],
    ['no rkey', withCommit(7, { rkey: undefined }), 'missing_field', { timeUs: at }],
    ['a bad rkey', withCommit(7, { rkey: 'a/b' }), 'bad_rkey', { timeUs: at }],
    ['no record', withCommit(7, { record: undefined }), 'missing_field', { timeUs: at }],
    ['a string record', withCommit(7, { record: 'x' }), 'bad_record', { timeUs: at }],
    ['an array record', withCommit(7, { record: [1] }), 'bad_record', { timeUs: at }],
    ['no cid', withCommit(7, { cid: undefined }), 'missing_field', { timeUs: at }],
    ['an empty cid', withCommit(7, { cid: '' }), 'bad_cid', { timeUs: at }],
    [
      'no account body',
      { did: DID, time_us: at, kind: 'account' },
      'missing_field',
      { op: 'account' },
    ],
    ['account.active missing', { ...account(7), account: {} }, 'missing_field', { op: 'account' }],
    [
      'a bad account DID',
      { ...account(7), did: 'nope' },
      'bad_did',
      { op: 'account', timeUs: undefined },
    ],
    [
      'no identity body',
      { did: DID, time_us: at, kind: 'identity' },
      'missing_field',
      { op: 'identity' },
    ],
  ]
  it.each(cases)('skips %s', (_name, input, reason, extra) => {
    const r = skip(norm(input))
    expect(r.reason).toBe(reason)
    expect(r.detail).toEqual(expect.any(String))
    // toMatchObject cannot tell an absent timeUs from undefined: check it on its own.
    const { timeUs, ...rest } = extra as { timeUs?: number }
    expect(r).toMatchObject(rest)
    if ('timeUs' in extra) expect(r.timeUs).toBe(timeUs)
  })

  it('skips records nested absurdly deep instead of overflowing the stack', () => {
    const depth = 100_000
    const record = `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`
    const line = JSON.stringify(withCommit(8, { record: '@' })).replace('"@"', record)
    expect(skip(norm(line)).reason).toBe('bad_record')
  })

  it('skips a record with an integer beyond 2^53, which JSON.parse has rounded', () => {
    for (const big of ['9007199254740992', '-9223372036854775809', '18446744073709551615']) {
      const line = JSON.stringify(withCommit(8, { record: { n: [1, '@'] } })).replace('"@"', big)
      const r = skip(norm(line))
      expect(r).toMatchObject({ reason: 'bad_record', timeUs: T0 + 8000 })
      expect(r.detail).toContain('beyond ±2^53')
    }
    const edge = JSON.stringify(withCommit(8, { record: { n: Number.MAX_SAFE_INTEGER } }))
    expect(norm(edge).ok).toBe(true)
  })

  it('does not judge commits of collections we do not keep', () => {
    const r = norm(withCommit(9, { collection: 'app.bsky.feed.post', rkey: undefined }))
    expect(r).toMatchObject({ ok: true, item: { event: null, cursor: timeCursor(T0 + 9000) } })
  })

  it('reports no timeUs when time_us is unreadable', () => {
    expect('timeUs' in skip(norm({ ...commit(7), time_us: 'soon' }))).toBe(false)
    expect('timeUs' in skip(norm('{'))).toBe(false)
  })

  it('recordSkip counts an error and logs the reason with the line', async () => {
    const metrics = testMetrics()
    const { logger, logs } = captureLogger()
    const lines = [
      JSON.stringify(commit(1)),
      'garbage',
      JSON.stringify(withCommit(2, { record: 'x' })),
      JSON.stringify(account(3)),
    ]
    const good: number[] = []
    lines.forEach((line, i) => {
      const r = norm(line)
      if (r.ok) good.push(i + 1)
      else recordSkip({ logger, metrics }, 'replay', r, { line: i + 1 })
    })
    expect(good).toEqual([1, 4])
    const err = { source: 'replay', outcome: 'error' }
    expect(await counterValue(metrics, { ...err, collection: 'unknown', op: 'unknown' })).toBe(1)
    expect(await counterValue(metrics, { ...err, collection: PROMPT, op: 'create' })).toBe(1)
    expect(logs.map((l) => [l.level, l.reason, l.line])).toEqual([
      [40, 'invalid_json', 2],
      [40, 'bad_record', 3],
    ])
    const text = await metrics.registry.getSingleMetricAsString('prompt_appview_events_total')
    expect(text).toContain(
      `prompt_appview_events_total{source="replay",collection="${PROMPT}",op="create",outcome="error"} 1`,
    )
  })
})
