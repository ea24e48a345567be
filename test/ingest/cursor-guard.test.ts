import { describe, expect, it } from 'vitest'
import {
  advanceSeqCursor,
  advanceTimeCursor,
  checkSourceTime,
  createRefusalReporter,
  guardSeqFrame,
  MAX_FUTURE_SKEW_US,
  MAX_SEQ_LEAP,
  type SeqTrack,
} from '../../src/ingest/cursor-guard.ts'
import { seqCursor } from '../../src/model/cursor.ts'
import { captureLogger, testMetrics } from '../helpers/ingest-kit.ts'

const NOW = 1_764_460_800_000_000

describe('checkSourceTime', () => {
  it('accepts the past and clock skew up to the bound, refuses beyond it', () => {
    expect(checkSourceTime(NOW - 3_600_000_000, NOW)).toBe(null)
    expect(checkSourceTime(0, NOW)).toBe(null)
    expect(checkSourceTime(NOW + MAX_FUTURE_SKEW_US, NOW)).toBe(null)
    expect(checkSourceTime(NOW + MAX_FUTURE_SKEW_US + 1, NOW)).toBe('future_time')
    expect(checkSourceTime(Number.MAX_SAFE_INTEGER, NOW)).toBe('future_time')
  })

  it('refuses what is not a safe non-negative integer', () => {
    for (const t of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 60]) {
      expect(checkSourceTime(t, NOW)).toBe('bad_time')
    }
  })
})

describe('advanceTimeCursor', () => {
  it('moves forward only, and a refused time leaves cursor and lag alone', () => {
    expect(advanceTimeCursor(null, NOW - 10, NOW)).toEqual({
      cursor: NOW - 10,
      timeUs: NOW - 10,
      refusal: null,
    })
    // A rewound replay: older than the cursor, which stays; the time still counts for lag.
    expect(advanceTimeCursor(NOW - 10, NOW - 20, NOW)).toEqual({
      cursor: NOW - 10,
      timeUs: NOW - 20,
      refusal: null,
    })
    expect(advanceTimeCursor(NOW - 10, Number.MAX_SAFE_INTEGER, NOW)).toEqual({
      cursor: NOW - 10,
      timeUs: null,
      refusal: 'future_time',
    })
    expect(advanceTimeCursor(null, NOW + 3_600_000_000, NOW).cursor).toBe(null)
  })
})

describe('advanceSeqCursor', () => {
  const run = (start: number | null, seqs: number[]) => {
    let track: SeqTrack = { accepted: start, candidate: null }
    return seqs.map((seq) => {
      const r = advanceSeqCursor(track, seq)
      track = r.track
      return r.refusal ?? r.cursor
    })
  }

  it('follows a contiguous sequence, with small gaps', () => {
    expect(run(10, [11, 12, 15, 16])).toEqual([11, 12, 15, 16])
    expect(run(null, [500, 501])).toEqual([500, 501])
  })

  it('one hostile huge seq is refused and the real sequence goes on', () => {
    expect(run(10, [11, Number.MAX_SAFE_INTEGER, 12, 13])).toEqual([11, 'seq_leap', 12, 13])
    expect(run(10, [11, 11 + MAX_SEQ_LEAP + 1, 12])).toEqual([11, 'seq_leap', 12])
  })

  it('one backwards or repeated seq is refused and the sequence goes on', () => {
    expect(run(10, [11, 3, 12])).toEqual([11, 'seq_backwards', 12])
    expect(run(10, [11, 11, 12])).toEqual([11, 'seq_backwards', 12])
  })

  it('a jump or a renumbering confirmed by the next seq is adopted', () => {
    const far = 11 + 5 * MAX_SEQ_LEAP
    expect(run(10, [11, far, far + 1, far + 2])).toEqual([11, 'seq_leap', far + 1, far + 2])
    // A relay reset: numbering starts again from 1.
    expect(run(1000, [1001, 1, 2, 3])).toEqual([1001, 'seq_backwards', 2, 3])
  })

  it('refuses seqs that are not safe non-negative integers', () => {
    expect(run(10, [-5, 2 ** 60, 11])).toEqual(['seq_backwards', 'seq_leap', 11])
  })
})

describe('guardSeqFrame', () => {
  it('a refused seq takes the cursor off every item, a refused time only the lag', () => {
    const items = [
      { event: null, cursor: seqCursor(99), timeUs: NOW - 5 },
      { event: null, cursor: seqCursor(100), timeUs: NOW + 3_600_000_000 },
      { event: null, cursor: seqCursor(100), timeUs: null },
    ]
    const ok = guardSeqFrame({ accepted: 98, candidate: null }, 100, items, NOW)
    expect(ok.items.map((i) => [i.cursor?.value, i.timeUs])).toEqual([
      [99, NOW - 5],
      [100, null],
      [100, null],
    ])
    expect(ok.refusals.sort()).toEqual(['bad_time', 'future_time'])
    expect(ok.track).toEqual({ accepted: 100, candidate: null })
    const leap = guardSeqFrame(ok.track, Number.MAX_SAFE_INTEGER, items.slice(0, 1), NOW)
    expect(leap.items[0]).toEqual({ event: null, cursor: null, timeUs: NOW - 5 })
    expect(leap.refusals).toEqual(['seq_leap'])
    expect(leap.track.accepted).toBe(100)
  })
})

describe('createRefusalReporter', () => {
  it('counts every refusal and logs a bounded number per window, then sums up', async () => {
    const metrics = testMetrics()
    const { logger, logs } = captureLogger()
    let t = 0
    const report = createRefusalReporter({
      source: 'replay',
      logger,
      metrics,
      burst: 3,
      windowMs: 1000,
      now: () => t,
    })
    for (let i = 0; i < 50; i++) report('future_time', { timeUs: i })
    t = 1000
    report('future_time', { timeUs: 50 })
    const got = await metrics.cursorRefusedTotal.get()
    const value = got.values.find(
      (v) => v.labels.source === 'replay' && v.labels.reason === 'future_time',
    )
    expect(value?.value).toBe(51)
    const lines = logs.filter((l) => l.reason === 'future_time')
    expect(lines).toHaveLength(4)
    expect(lines.at(-1)).toMatchObject({ timeUs: 50, suppressedBefore: 47 })
  })
})
