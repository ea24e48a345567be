import { zstdCompressSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { normalizeJetstreamEvent } from '../../src/ingest/jetstream/event.ts'
import { parseV2Frame, timeUsOf } from '../../src/ingest/jetstream/v2-frame.ts'
import {
  decodeZstdFrame,
  dictionaryIdOf,
  frameDictionaryId,
  ZstdFrameError,
} from '../../src/ingest/jetstream/v2-zstd.ts'
import { seqCursor, timeCursor } from '../../src/model/cursor.ts'
import { COLLECTIONS } from '../helpers/ingest-kit.ts'
import { DID, tid, V2_TIME, v2Delete, v2Frame } from '../helpers/jetstream-json.ts'
import { DICTIONARY, OTHER_DICTIONARY } from '../helpers/jetstream-v2-kit.ts'

// Case 1 and 9-10 of notes/jetstream-v2.md: the section-4 frames, zstd frames, v1 + cursor.

const opts = { collections: new Set(COLLECTIONS) }
const TIME = V2_TIME

describe('Jetstream v2 frames', () => {
  it('reads the section-4 frames', () => {
    const rec = { $type: 'xyz.quasigod.lab.letta.compiledPrompt', content: 'x' }
    const commit = parseV2Frame(
      v2Frame('commit', {
        seq: 1042,
        rev: tid(1),
        operation: 'create',
        collection: COLLECTIONS[0],
        rkey: tid(2),
        cid: 'bafyreiabc',
        record: rec,
      }),
      opts,
    )
    expect(commit).toMatchObject({
      type: 'item',
      seq: 1042,
      item: { cursor: seqCursor(1042), timeUs: Date.parse('2026-08-14T12:00:00Z') * 1000 + 123456 },
    })
    expect(commit.type === 'item' && commit.item.event).toMatchObject({
      kind: 'commit',
      op: 'create',
      rkey: tid(2),
      rev: tid(1),
      cid: 'bafyreiabc',
      record: rec,
    })
    const del = parseV2Frame(
      v2Frame('commit', { seq: 1043, ...v2Delete(2, COLLECTIONS[1]), rev: tid(3) }),
      opts,
    )
    expect(del.type === 'item' && del.item.event).toMatchObject({
      kind: 'commit',
      op: 'delete',
      cid: null,
    })
    const ident = parseV2Frame(
      v2Frame('identity', {
        seq: 1044,
        identity: { did: DID, handle: 'ada.example.com', seq: 9100000001, time: TIME },
      }),
      opts,
    )
    expect(ident).toMatchObject({
      type: 'item',
      unverifiedHandle: 'ada.example.com',
      item: { event: { kind: 'identity', seq: 9100000001, handle: null } },
    })
    for (const status of ['takendown', undefined]) {
      const acc = parseV2Frame(
        v2Frame('account', {
          seq: 1045,
          account: {
            active: status === undefined,
            did: DID,
            seq: 9100000002,
            ...(status ? { status } : {}),
            time: TIME,
          },
        }),
        opts,
      )
      expect(acc).toMatchObject({
        type: 'item',
        item: { event: { kind: 'account', status: status ?? null, seq: 9100000002 } },
      })
    }
    const sync = parseV2Frame(
      v2Frame('sync', {
        seq: 1046,
        sync: {
          blocks: { $bytes: 'OqJlcm9vdHOB' },
          did: DID,
          rev: tid(4),
          seq: 9100000003,
          time: TIME,
        },
      }),
      opts,
    )
    expect(sync).toMatchObject({ type: 'sync', seq: 1046, did: DID, rev: tid(4) })
    // A chain-break resync carries only did and rev.
    expect(
      parseV2Frame(v2Frame('sync', { seq: 7, sync: { did: DID, rev: tid(4) } }), opts).type,
    ).toBe('sync')
    expect(
      parseV2Frame(
        v2Frame('info', { did: undefined, time: undefined, name: 'OutdatedCursor', message: 'm' }),
        opts,
      ),
    ).toEqual({ type: 'info', name: 'OutdatedCursor', message: 'm' })
    expect(parseV2Frame('{"$type":"error","error":"ConsumerTooSlow","message":"m"}', opts)).toEqual(
      { type: 'error', error: 'ConsumerTooSlow', message: 'm' },
    )
  })

  it('skips unknown payload types and bad input with a reason, keeping a readable seq', () => {
    expect(parseV2Frame(v2Frame('labels', { seq: 9, did: undefined }), opts)).toMatchObject({
      type: 'skip',
      unknownType: true,
      seq: 9,
    })
    const reasons: Array<[string, string]> = [
      ['{', 'invalid_json'],
      ['[1]', 'not_object'],
      ['{"$type":"message"}', 'missing_field'],
      [v2Frame('commit', v2Delete(1)), 'missing_field'],
      [v2Frame('commit', { seq: -1 }), 'bad_seq'],
      [v2Frame('commit', { seq: 3, time: 'yesterday' }), 'bad_field'],
      [v2Frame('commit', { seq: 3, ...v2Delete(1), rev: undefined }), 'missing_field'],
      [
        v2Frame('sync', { seq: 3, sync: { did: DID, rev: tid(1), blocks: { $bytes: 'a=b' } } }),
        'bad_bytes',
      ],
      [v2Frame('sync', { seq: 3, sync: { did: DID, rev: 'nope' } }), 'bad_rev'],
    ]
    for (const [text, reason] of reasons) {
      const f = parseV2Frame(text, opts)
      expect(f.type === 'skip' && f.skip.reason, text).toBe(reason)
    }
  })

  it('reads RFC 3339 times to the microsecond', () => {
    expect(timeUsOf('1970-01-01T00:00:01.000002Z')).toBe(1_000_002)
    expect(timeUsOf('1970-01-01T00:00:01Z')).toBe(1_000_000)
    expect(timeUsOf('1970-01-01 00:00:01Z')).toBeUndefined()
    expect(timeUsOf(12)).toBeUndefined()
  })

  it('v1 frames from a v2 server: the cursor field is the cursor (replay files keep time_us)', () => {
    const v1 = {
      did: DID,
      time_us: 1_764_460_800_000_000,
      kind: 'commit',
      cursor: 77,
      commit: { rev: tid(1), operation: 'delete', collection: COLLECTIONS[0], rkey: tid(1) },
    }
    const withSeq = normalizeJetstreamEvent(JSON.stringify(v1), { ...opts, seqCursor: true })
    expect(withSeq.ok && withSeq.item.cursor).toEqual(seqCursor(77))
    const replay = normalizeJetstreamEvent(JSON.stringify(v1), opts)
    expect(replay.ok && replay.item.cursor).toEqual(timeCursor(v1.time_us))
  })
})

describe('Jetstream v2 dictionary zstd', () => {
  const text = v2Frame('commit', { seq: 1, ...v2Delete(1) })
  const frame = zstdCompressSync(Buffer.from(text), { dictionary: DICTIONARY })
  const dict = { id: dictionaryIdOf(DICTIONARY)!, bytes: DICTIONARY }

  it('reads the dictionary ID and the ID a frame names, and decodes', () => {
    expect(dict.id).toBe(20261201)
    expect(dictionaryIdOf(OTHER_DICTIONARY)).toBe(20261202)
    expect(dictionaryIdOf(Buffer.from('not a dictionary'))).toBeNull()
    expect(frameDictionaryId(frame)).toBe(20261201)
    expect(decodeZstdFrame(frame, dict, 1 << 20)).toBe(text)
  })

  it('fails loudly: without the dictionary, with another one, past the cap, on junk', () => {
    const reason = (f: () => unknown) => {
      try {
        f()
      } catch (err) {
        return err instanceof ZstdFrameError ? err.reason : String(err)
      }
      return 'decoded'
    }
    const other = { id: 20261202, bytes: OTHER_DICTIONARY }
    expect(reason(() => decodeZstdFrame(frame, other, 1 << 20))).toBe('zstd_dictionary')
    // Same ID, other bytes: zstd itself refuses (it never hands back garbage here).
    expect(
      reason(() => decodeZstdFrame(frame, { id: dict.id, bytes: OTHER_DICTIONARY }, 1 << 20)),
    ).not.toBe('decoded')
    expect(reason(() => decodeZstdFrame(frame, dict, 10))).toBe('zstd_cap')
    expect(reason(() => decodeZstdFrame(Buffer.from('junk frame'), dict, 1 << 20))).toBe(
      'zstd_corrupt',
    )
  })
})
