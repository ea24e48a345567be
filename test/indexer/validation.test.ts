import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import type { Database } from '../../src/db/client.ts'
import type { IndexerDeps } from '../../src/indexer/apply.ts'
import { analyzePrompt, datetimeToMicros, PromptValidator } from '../../src/model/prompt-record.ts'
import { apply, NSIDS, World } from '../helpers/events.ts'
import { getPrompt } from '../helpers/get-prompt.ts'
import { useIndexerDb } from '../helpers/indexer-db.ts'

const validator = new PromptValidator(NSIDS.prompt)
const w = new World()
const did = 'did:plc:validationaaaaaaaaaaaa'
const rkey = '3m6sm7ncql52b'
const valid = () => w.promptRecord(did, rkey)
const without = (field: string) => {
  const r = valid()
  delete r[field]
  return r
}

describe('validity rules, each broken on its own', () => {
  it('a complete record is valid', () => {
    expect(validator.validate(rkey, valid())).toBeNull()
  })

  it.each(['agent', 'conversation', 'content', 'coreMemory', 'rawSystemHash', 'compiledAt'])(
    'missing %s',
    (field) => {
      expect(validator.validate(rkey, without(field))).toMatch(new RegExp(field))
    },
  )

  it.each([
    ['content', 42],
    ['coreMemory', ['x']],
    ['memfsRevision', 7],
    ['rawSystemHash', { h: 1 }],
  ])('wrong type of %s', (field, value) => {
    expect(validator.validate(rkey, { ...valid(), [field]: value })).toMatch(new RegExp(field))
  })

  it('maxLength counts UTF-8 bytes: 200000 bytes is valid, one more byte is not', () => {
    const exact = 'a'.repeat(200_000)
    expect(validator.validate(rkey, { ...valid(), content: exact, coreMemory: 'a' })).toBeNull()
    // 100001 characters of 2 bytes: under 200000 characters, over 200000 bytes.
    const wide = 'é'.repeat(100_001)
    expect(wide.length).toBeLessThan(200_000)
    expect(validator.validate(rkey, { ...valid(), content: wide, coreMemory: 'é' })).toMatch(
      /content/,
    )
    expect(validator.validate(rkey, { ...valid(), content: `${exact}a` })).toMatch(/content/)
  })

  it('memfsRevision and rawSystemHash are limited to 128 bytes', () => {
    expect(validator.validate(rkey, { ...valid(), memfsRevision: 'x'.repeat(129) })).toMatch(
      /memfsRevision/,
    )
    expect(validator.validate(rkey, { ...valid(), rawSystemHash: 'x'.repeat(128) })).toBeNull()
  })

  it.each(['not a uri', 'https://example.com/x', 'at://'])('bad at-uri %j', (uri) => {
    expect(validator.validate(rkey, { ...valid(), agent: uri })).toMatch(/agent/)
  })

  it.each(['yesterday', '2025-13-01T00:00:00Z', '2025-01-01 00:00:00Z'])(
    'bad datetime %j',
    (dt) => {
      expect(validator.validate(rkey, { ...valid(), compiledAt: dt })).toMatch(/compiledAt/)
    },
  )

  it('a datetime without a timezone is invalid (the lexicon package alone accepts it)', () => {
    expect(validator.validate(rkey, { ...valid(), compiledAt: '2025-11-30T00:00:00' })).toMatch(
      /compiledAt/,
    )
    expect(
      validator.validate(rkey, { ...valid(), compiledAt: '2025-11-30T00:00:00+01:00' }),
    ).toBeNull()
  })

  it('a record key that is not a TID is invalid', () => {
    expect(validator.validate('self', valid())).toMatch(/TID/)
    expect(validator.validate('3m6sm7ncql52bb', valid())).toMatch(/TID/)
  })

  it('the lexicon shipped in the repo is the published one', () => {
    const ours = readFileSync(
      new URL('../../lexicons/xyz/quasigod/lab/letta/compiledPrompt.json', import.meta.url),
      'utf8',
    )
    let published: string
    try {
      published = readFileSync(
        new URL(
          '../../../shared/lexicons/xyz/quasigod/lab/letta/compiledPrompt.json',
          import.meta.url,
        ),
        'utf8',
      )
    } catch {
      // Outside the project workspace there is no shared/ beside the repo to compare with.
      published = ours
    }
    expect(JSON.parse(ours)).toEqual(JSON.parse(published))
  })
})

describe('datetimes compare as instants below the millisecond', () => {
  it('keeps microseconds and honours offsets', () => {
    expect(
      datetimeToMicros('2025-01-01T00:00:00.000001Z')! - datetimeToMicros('2025-01-01T00:00:00Z')!,
    ).toBe(1)
    expect(datetimeToMicros('2025-01-01T01:00:00+01:00')).toBe(
      datetimeToMicros('2025-01-01T00:00:00Z'),
    )
    expect(datetimeToMicros('2025-01-01T00:00:00')).toBeNull()
  })
})

describe('invalid prompts are stored, flagged and served, never dropped', () => {
  let db: Database
  let deps: IndexerDeps
  useIndexerDb((x) => {
    ;({ db, deps } = x)
  })

  it('stores the record with its validationError and computes the other flags', async () => {
    const r = w.tid()
    const record = {
      ...w.promptRecord(did, r),
      compiledAt: '2025-11-30T00:00:00',
      content: 'no memory',
    }
    const res = await apply(deps, [w.commit({ did, collection: NSIDS.prompt, rkey: r, record })])
    expect(res.outcomes).toEqual([{ collection: NSIDS.prompt, op: 'create', outcome: 'invalid' }])
    const p = await getPrompt(db, NSIDS, did, r)
    expect(p?.record).toEqual(record)
    expect(p?.flags).toEqual(['orphaned', 'coreMemoryDetached', 'invalid'])
    expect(p?.validationError).toMatch(/compiledAt/)
  })

  it('a record missing every field is still stored as invalid', async () => {
    const r = w.tid()
    await apply(deps, [
      w.commit({ did, collection: NSIDS.prompt, rkey: r, record: { $type: NSIDS.prompt } }),
    ])
    const p = await getPrompt(db, NSIDS, did, r)
    expect(p?.flags).toEqual(['orphaned', 'mismatched', 'invalid'])
    expect(p?.validationError).toBeTruthy()
  })
})

describe('content size and hash', () => {
  it('are of the UTF-8 bytes, for every content of a run (the encoding buffer is reused)', () => {
    const validator = new PromptValidator(NSIDS.prompt)
    const contents = [
      'plain',
      'You are an agent — kind. 😀 é 中',
      '', // empty: zero bytes, the hash of nothing
      '€'.repeat(40_000), // 120,000 bytes: past the first buffer
      'short again',
      'a\ud800b', // a lone surrogate is U+FFFD's three bytes, as Buffer.from gives
      'x'.repeat(400_000), // beyond the kept buffer's bound: encoded on its own
    ]
    for (const [i, content] of contents.entries()) {
      const facts = analyzePrompt(validator, NSIDS, 'did:plc:a', `3lb2xv7kdqc2${i}`, { content })
      const bytes = Buffer.from(content, 'utf8')
      expect(facts.contentBytes).toBe(bytes.length)
      expect(facts.contentHash).toBe(createHash('sha256').update(bytes).digest('hex'))
    }
  })
})
