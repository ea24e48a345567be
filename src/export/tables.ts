import type { PromptExportRow, RecordExportRow, RevisionExportRow } from '../db/read/export.ts'
import { flagsToNames } from '../model/flags.ts'
import type { Nsids } from '../model/nsids.ts'
import { datetimeToMicros } from '../model/prompt-record.ts'

// The columns of each exported table (schema version 2), in one place: the Parquet schema and the
// NDJSON objects are both made from these, so the two formats cannot drift apart.

/** A column's type as both formats write it. */
export type ColumnKind = 'string' | 'int' | 'boolean' | 'timestamp' | 'stringList'

export interface ExportColumn<R> {
  name: string
  kind: ColumnKind
  /** May be null (Parquet OPTIONAL), a list too when nullable. */
  nullable: boolean
  value: (row: R) => string | number | boolean | Date | string[] | null
}

const col = <R>(
  name: string,
  kind: ColumnKind,
  value: ExportColumn<R>['value'],
  nullable = true,
): ExportColumn<R> => ({ name, kind, nullable, value })

/** Timestamps come back as text (postgres.js) or a Date (PGlite). */
const dateOf = (v: string | Date): Date => (v instanceof Date ? v : new Date(v))

/** A record's datetime as an instant by the strict atproto rule; null when it is not one. */
const instantOf = (raw: string | null): Date | null => {
  const micros = raw === null ? null : datetimeToMicros(raw)
  return micros === null ? null : new Date(Math.floor(micros / 1000))
}

export const promptColumns = (nsids: Nsids): ExportColumn<PromptExportRow>[] => [
  col('uri', 'string', (r) => `at://${r.did}/${nsids.prompt}/${r.rkey}`, false),
  col('did', 'string', (r) => r.did, false),
  col('rkey', 'string', (r) => r.rkey, false),
  col('cid', 'string', (r) => r.cid),
  col('rev', 'string', (r) => r.rev, false),
  col('agent', 'string', (r) => r.agent),
  col('agentName', 'string', (r) => r.agentName),
  col('handle', 'string', (r) => r.handle),
  col('conversation', 'string', (r) => r.conversation),
  col('compiledAt', 'timestamp', (r) => instantOf(r.compiledAtRaw)),
  col('compiledAtRaw', 'string', (r) => r.compiledAtRaw),
  col('content', 'string', (r) => r.content),
  col('coreMemory', 'string', (r) => r.coreMemory),
  col('memfsRevision', 'string', (r) => r.memfsRevision),
  col('rawSystemHash', 'string', (r) => r.rawSystemHash),
  col('changed', 'stringList', (r) => r.changed),
  col('flags', 'stringList', (r) => flagsToNames(r.flags), false),
  col('recompiles', 'int', (r) => r.recompiles, false),
  col('indexedAt', 'timestamp', (r) => dateOf(r.indexedAt), false),
  col('contentBytes', 'int', (r) => r.contentBytes),
  col('validationError', 'string', (r) => r.validationError),
  col('provenance', 'string', (r) => r.provenance),
  col('conversationExists', 'boolean', (r) => r.conversationExists, false),
  col('namedConversationExists', 'boolean', (r) => r.namedConversationExists, false),
  col('agentExists', 'boolean', (r) => r.agentExists, false),
]

/** One prompt_flags row: a visible prompt and one of its flags (`ok` for none). */
export interface PromptFlagOut {
  did: string
  rkey: string
  flag: string
}

export const promptFlagColumns = (nsids: Nsids): ExportColumn<PromptFlagOut>[] => [
  col('uri', 'string', (r) => `at://${r.did}/${nsids.prompt}/${r.rkey}`, false),
  col('flag', 'string', (r) => r.flag, false),
]

export const recordColumns = (nsid: string): ExportColumn<RecordExportRow>[] => [
  col('uri', 'string', (r) => `at://${r.did}/${nsid}/${r.rkey}`, false),
  col('did', 'string', (r) => r.did, false),
  col('rkey', 'string', (r) => r.rkey, false),
  col('cid', 'string', (r) => r.cid),
  col('rev', 'string', (r) => r.rev, false),
  col('record', 'string', (r) => r.record),
  col('indexedAt', 'timestamp', (r) => dateOf(r.indexedAt), false),
]

/** A revision with its texts rebuilt (snapshot.ts). */
export type RevisionOut = RevisionExportRow & { content: string | null; coreMemory: string | null }

export const revisionColumns = (nsids: Nsids): ExportColumn<RevisionOut>[] => [
  col('prompt', 'string', (r) => `at://${r.did}/${nsids.prompt}/${r.rkey}`, false),
  col('rev', 'string', (r) => r.rev, false),
  col('cid', 'string', (r) => r.cid, false),
  col('compiledAt', 'string', (r) => r.compiledAt),
  col('memfsRevision', 'string', (r) => r.memfsRevision),
  col('rawSystemHash', 'string', (r) => r.rawSystemHash),
  col('content', 'string', (r) => r.content),
  col('coreMemory', 'string', (r) => r.coreMemory),
  col('changed', 'stringList', (r) => r.changed),
  col('memoryFiles', 'stringList', (r) => r.memoryFiles),
  col('seenAt', 'timestamp', (r) => dateOf(r.seenAt), false),
]

/** A row as an NDJSON line: the same columns, timestamps as ISO text. */
export function jsonLine<R>(columns: ExportColumn<R>[], row: R): string {
  const out: Record<string, unknown> = {}
  for (const c of columns) {
    const v = c.value(row)
    out[c.name] = v instanceof Date ? v.toISOString() : v
  }
  return `${JSON.stringify(out)}\n`
}
