// postgres.js decodes every text-format column to a JS string before its type parser runs.
// A prompt's record (2-200 KB of JSON) goes into its answer as bytes, so decoding it only to
// encode it again was most of what a lookup allocated: two copies of the record per request
// in V8's young generation, promoted by the scavenges they caused. A raw query hands back
// each column undecoded; the columns the caller names stay bytes, and every other one goes
// through the driver's own parser for its type, exactly as a normal query would.

/** A column of a raw result as postgres.js describes it (its RowDescription). */
export interface RawColumn {
  name: string
  parser?: ((raw: string) => unknown) & { array?: boolean }
}

/** postgres.js's raw row: each column a Buffer (a view of the message it came in), or null. */
export type RawRow = readonly (Buffer | null)[]

/** One raw row as an object: `bytes` columns as Buffers, the rest parsed by their type. */
export function decodeRawRow<T>(
  row: RawRow,
  columns: readonly RawColumn[],
  bytes: ReadonlySet<string>,
): T {
  const out: Record<string, unknown> = {}
  for (let i = 0; i < columns.length; i++) {
    const { name, parser } = columns[i]
    const raw = row[i]
    if (raw === null || raw === undefined) out[name] = null
    else if (bytes.has(name)) out[name] = raw
    else {
      // The driver hands array parsers the text after the opening brace (connection.js).
      out[name] =
        parser === undefined
          ? raw.toString('utf8')
          : parser.array === true
            ? parser(raw.toString('utf8', 1))
            : parser(raw.toString('utf8'))
    }
  }
  return out as T
}
