import { describe, expect, it } from 'vitest'
import { RAW_RECORD, spliceRecord } from '../../src/api/raw-record.ts'

// The stored record text replaces the one placeholder value, wherever the serializer put it,
// and nothing a string field can hold is taken for it.

describe('spliceRecord', () => {
  const serialize = (v: unknown) => JSON.stringify(v)

  it('puts the record text in the record slot and leaves every other byte alone', () => {
    const record = '{"content": "a \\"quoted\\" line\\nand \\u0000", "n": 1.5e300}'
    const answer = { uri: `at://x/"record":"${RAW_RECORD}"`, record: RAW_RECORD, after: [1, 'z'] }
    const body = spliceRecord(serialize)({ answer, recordJson: record })
    expect(JSON.parse(body)).toEqual({ ...answer, record: JSON.parse(record) })
    expect(body).toBe(`{"uri":${JSON.stringify(answer.uri)},"record":${record},"after":[1,"z"]}`)
  })

  it('refuses an answer without the placeholder instead of sending it without its record', () => {
    expect(() =>
      spliceRecord(serialize)({ answer: { record: { parsed: true } }, recordJson: '{}' }),
    ).toThrow(new Error('the serialized answer has no record slot to fill'))
  })
})
