// A prompt record as the write path sends it: its long texts apart from the rest, because a
// string inside a JSON parameter goes through Postgres's slow JSON lexer (bench/README.md,
// "The write path"). db/writes.ts rebuilds the same jsonb with `rest || jsonb_build_object(...)`,
// which lexes no text (jsonb sorts its keys, so their order does not matter).

export interface RecordParts {
  /** The record as JSON text without the fields below (all of it when nothing was taken). */
  rest: string
  /** `content`, when the record is an object whose content is a string; else left in rest. */
  content: string | null
  /** `coreMemory`, likewise. */
  coreMemory: string | null
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v)

/** The texts splitRecord takes out of `record`, without serializing the rest. */
export function textsOf(record: unknown): Pick<RecordParts, 'content' | 'coreMemory'> {
  if (!isPlainObject(record)) return { content: null, coreMemory: null }
  return {
    content: typeof record.content === 'string' ? record.content : null,
    coreMemory: typeof record.coreMemory === 'string' ? record.coreMemory : null,
  }
}

/**
 * Takes content and coreMemory (nearly all of a prompt record's bytes) out of a record;
 * `rest` is JSON.stringify of the whole when nothing is taken.
 */
export function splitRecord(record: unknown): RecordParts {
  const { content, coreMemory } = textsOf(record)
  if (!isPlainObject(record) || (content === null && coreMemory === null))
    return { rest: JSON.stringify(record ?? null), content, coreMemory }
  // No prototype: a record's own "__proto__" key stays a key here, as in JSON.parse's output.
  const rest: Record<string, unknown> = Object.create(null)
  for (const k in record) {
    if (!Object.hasOwn(record, k)) continue
    if ((k === 'content' && content !== null) || (k === 'coreMemory' && coreMemory !== null))
      continue
    rest[k] = record[k]
  }
  return { rest: JSON.stringify(rest), content, coreMemory }
}
