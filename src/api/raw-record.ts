// A record goes into its answer as the JSON text Postgres stores, never parsed and serialized
// again (that dominated a lookup's CPU on a cache miss): the text replaces RAW_RECORD.

/** Stands for the record in a view until its text is spliced in; no record holds it. */
export const RAW_RECORD = '\u0000raw record\u0000'

/** An answer whose `record` is RAW_RECORD, and the record's JSON text. */
export interface RawRecordAnswer<T> {
  answer: T
  recordJson: string
}

const SLOT = `"record":${JSON.stringify(RAW_RECORD)}`

/** Serializes with `serialize`, then puts the record's text where RAW_RECORD went. */
export function spliceRecord<T>(
  serialize: (value: T) => string,
): (value: RawRecordAnswer<T>) => Buffer {
  return ({ answer, recordJson }) => {
    const body = serialize(answer)
    // The first match is the top-level key: earlier members are strings, numbers and flat
    // objects, and inside a string every quote is escaped, so none can spell SLOT.
    const at = body.indexOf(SLOT)
    if (at < 0) throw new Error('the serialized answer has no record slot to fill')
    return Buffer.from(`${body.slice(0, at)}"record":${recordJson}${body.slice(at + SLOT.length)}`)
  }
}
