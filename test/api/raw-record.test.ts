import { describe, expect, it } from 'vitest'
import { RAW_RECORD, spliceRecord } from '../../src/api/raw-record.ts'

// The stored record's bytes replace the one placeholder value, wherever the serializer put
// it, and nothing a string field can hold is taken for it.

describe('spliceRecord', () => {
  const serialize = (v: unknown) => JSON.stringify(v)

  it('puts the record bytes in the record slot and leaves every other byte alone', () => {
    const record = '{"content": "a \\"quoted\\" line\\nand \\u0000 ünï 🧠", "n": 1.5e300}'
    const answer = { uri: `at://x/"record":"${RAW_RECORD}"`, record: RAW_RECORD, after: [1, 'ž'] }
    const body = spliceRecord(serialize)({ answer, recordJson: record })
    expect(Buffer.isBuffer(body)).toBe(true)
    expect(JSON.parse(body.toString())).toEqual({ ...answer, record: JSON.parse(record) })
    expect(body.toString()).toBe(
      `{"uri":${JSON.stringify(answer.uri)},"record":${record},"after":[1,"ž"]}`,
    )
  })

  it('refuses an answer without the placeholder instead of sending it without its record', () => {
    expect(() =>
      spliceRecord(serialize)({
        answer: { record: { parsed: true } },
        recordJson: '{}',
      }),
    ).toThrow(new Error('the serialized answer has no record slot to fill'))
  })
})
