import { createReadStream } from 'node:fs'
import { createInterface } from 'node:readline'
import { DuckDBInstance, LIST, timestampTZValue, VARCHAR } from '@duckdb/node-api'
import { openTableFile } from '../../src/export/files.ts'
import type { ColumnKind, ExportColumn } from '../../src/export/tables.ts'

// The Parquet writer choice (bench/export.ts): the first `rows` prompts of an NDJSON export
// written as Parquet by one library, in row groups of GROUP rows. argv: library
// (hyparquet-writer | duckdb), NDJSON input, output file, rows. Prints the writing time.

const GROUP = 2000
const [lib, input, file, rowsArg] = process.argv.slice(2)
const limit = Number(rowsArg)

type Row = Record<string, unknown>
const KINDS: Record<string, ColumnKind> = {
  flags: 'stringList',
  recompiles: 'int',
  contentBytes: 'int',
  conversationExists: 'boolean',
  agentExists: 'boolean',
  indexedAt: 'timestamp',
}
const DUCK: Record<ColumnKind, string> = {
  string: 'VARCHAR',
  int: 'BIGINT',
  boolean: 'BOOLEAN',
  timestamp: 'TIMESTAMPTZ',
  stringList: 'VARCHAR[]',
}

async function* batches(): AsyncGenerator<Row[]> {
  let batch: Row[] = []
  let n = 0
  for await (const line of createInterface({ input: createReadStream(input) })) {
    if (n++ >= limit) break
    batch.push(JSON.parse(line) as Row)
    if (batch.length === GROUP) {
      yield batch
      batch = []
    }
  }
  if (batch.length) yield batch
}

let columns: ExportColumn<Row>[] | null = null
const columnsOf = (r: Row): ExportColumn<Row>[] =>
  Object.keys(r).map((name) => {
    const kind = KINDS[name] ?? 'string'
    return {
      name,
      kind,
      nullable: kind !== 'stringList',
      value: (row) => (kind === 'timestamp' ? new Date(String(row[name])) : (row[name] as never)),
    }
  })

let writeMs = 0
const timed = async (f: () => unknown) => {
  const t = performance.now()
  await f()
  writeMs += performance.now() - t
}

if (lib === 'hyparquet-writer') {
  let out: ReturnType<typeof openTableFile<Row>> | null = null
  for await (const batch of batches()) {
    columns ??= columnsOf(batch[0])
    out ??= openTableFile('parquet', file, columns)
    await timed(() => out!.write(batch))
  }
  await timed(() => out!.finish())
} else {
  const duck = await DuckDBInstance.create(':memory:')
  const conn = await duck.connect()
  let appender: Awaited<ReturnType<typeof conn.createAppender>> | null = null
  for await (const batch of batches()) {
    if (!columns) {
      columns = columnsOf(batch[0])
      const defs = columns.map((c) => `"${c.name}" ${DUCK[c.kind]}`).join(', ')
      await conn.run(`CREATE TABLE t (${defs})`)
      appender = await conn.createAppender('t')
    }
    await timed(() => {
      for (const r of batch) {
        for (const c of columns!) appendValue(appender!, c, r)
        appender!.endRow()
      }
      appender!.flushSync()
    })
  }
  appender!.closeSync()
  await timed(() =>
    conn.run(`COPY t TO '${file}' (FORMAT parquet, COMPRESSION snappy, ROW_GROUP_SIZE ${GROUP})`),
  )
  conn.closeSync()
  duck.closeSync()
}
console.log(JSON.stringify({ lib, writeMs: Math.round(writeMs) }))

function appendValue(
  a: {
    appendNull(): void
    appendBigInt(v: bigint): void
    appendBoolean(v: boolean): void
    appendTimestampTZ(v: ReturnType<typeof timestampTZValue>): void
    appendList(v: string[], t: ReturnType<typeof LIST>): void
    appendVarchar(v: string): void
  },
  c: ExportColumn<Row>,
  r: Row,
) {
  const v = c.value(r)
  if (v === null || v === undefined) return a.appendNull()
  if (c.kind === 'int') return a.appendBigInt(BigInt(v as number))
  if (c.kind === 'boolean') return a.appendBoolean(v as boolean)
  if (c.kind === 'timestamp')
    return a.appendTimestampTZ(timestampTZValue(BigInt((v as Date).getTime()) * 1000n))
  if (c.kind === 'stringList') return a.appendList(v as string[], LIST(VARCHAR))
  return a.appendVarchar(String(v))
}
