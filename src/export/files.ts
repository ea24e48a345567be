import { once } from 'node:events'
import { createWriteStream } from 'node:fs'
import { fileWriter, ParquetWriter } from 'hyparquet-writer'
import { VERSION } from '../config/version.ts'
import type { ColumnKind, ExportColumn } from './tables.ts'
import { jsonLine } from './tables.ts'

// One table's file, a batch of rows at a time (a Parquet row group, or NDJSON lines), so
// memory is one batch whatever the table's size.

export type ExportFormat = 'parquet' | 'ndjson'

export interface TableFile<R> {
  /** Writes one batch (a Parquet row group). */
  write(rows: R[]): Promise<void>
  /** Ends the file; until then it is not a valid file of its format. */
  finish(): Promise<void>
}

type SchemaElement = ConstructorParameters<typeof ParquetWriter>[0]['schema'][number]

const LEAF: Record<Exclude<ColumnKind, 'stringList'>, Partial<SchemaElement>> = {
  string: { type: 'BYTE_ARRAY', converted_type: 'UTF8' },
  int: { type: 'INT64' },
  boolean: { type: 'BOOLEAN' },
  timestamp: {
    type: 'INT64',
    converted_type: 'TIMESTAMP_MILLIS',
    logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MILLIS' },
  },
}

/** The Parquet schema of `columns`; a string list is the standard three-level LIST. */
function parquetSchema<R>(columns: ExportColumn<R>[]): SchemaElement[] {
  const out: SchemaElement[] = [{ name: 'root', num_children: columns.length }]
  for (const c of columns) {
    const repetition_type = c.nullable ? 'OPTIONAL' : 'REQUIRED'
    if (c.kind === 'stringList') {
      out.push(
        { name: c.name, repetition_type, converted_type: 'LIST', num_children: 1 },
        { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
        { name: 'element', repetition_type: 'REQUIRED', ...LEAF.string } as SchemaElement,
      )
    } else out.push({ name: c.name, repetition_type, ...LEAF[c.kind] } as SchemaElement)
  }
  return out
}

/** Parquet INT64 columns take bigints. */
const parquetValue = (kind: ColumnKind, v: unknown) =>
  kind === 'int' && typeof v === 'number' ? BigInt(v) : v

function parquetFile<R>(path: string, columns: ExportColumn<R>[]): TableFile<R> {
  const writer = new ParquetWriter({
    writer: fileWriter(path),
    schema: parquetSchema(columns),
    codec: 'SNAPPY',
    createdBy: `prompt-appview ${VERSION}`,
  })
  return {
    async write(rows) {
      if (rows.length === 0) return
      const columnData = columns.map((c) => ({
        name: c.name,
        data: rows.map((r) => parquetValue(c.kind, c.value(r))),
      }))
      await writer.write({ columnData, rowGroupSize: rows.length })
    },
    finish: async () => writer.finish(),
  }
}

function ndjsonFile<R>(path: string, columns: ExportColumn<R>[]): TableFile<R> {
  const out = createWriteStream(path)
  const failed = once(out, 'error').then(([err]) => Promise.reject(err))
  failed.catch(() => {}) // observed by the write that meets it
  return {
    async write(rows) {
      const ok = out.write(rows.map((r) => jsonLine(columns, r)).join(''))
      if (!ok) await Promise.race([once(out, 'drain'), failed])
    },
    async finish() {
      out.end()
      await Promise.race([once(out, 'finish'), failed])
    },
  }
}

export function openTableFile<R>(
  format: ExportFormat,
  path: string,
  columns: ExportColumn<R>[],
): TableFile<R> {
  return format === 'parquet' ? parquetFile(path, columns) : ndjsonFile(path, columns)
}
