import { rename, rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Database } from '../db/client.ts'
import {
  type ExportKey,
  type ExportTable,
  type RevisionExportRow,
  readSnapshot,
  type SnapshotReader,
} from '../db/read/export.ts'
import { flagsToNames } from '../model/flags.ts'
import type { Nsids } from '../model/nsids.ts'
import { keptHashes, keptTexts, repoTextDecoder } from '../model/text-delta.ts'
import { type ExportFormat, openTableFile } from './files.ts'
import {
  type ExportColumn,
  promptColumns,
  promptFlagColumns,
  type RevisionOut,
  recordColumns,
  revisionColumns,
} from './tables.ts'

// `prompt-appview export` and GET /v1/export: one snapshot's visible state in keyset pages,
// then manifest.json naming its change-log seq. Files take their name only once whole and the
// manifest comes last, so a directory with a manifest holds a complete export.

const SCHEMA_VERSION = 2

/** Rows per read of the database. */
const PAGE_ROWS = 500
/** A row group is written once its texts pass this many UTF-16 units, or this many rows. */
const GROUP_UNITS = 8 * 1024 * 1024
const GROUP_ROWS = 50_000

export interface ExportFile {
  table: ExportTable
  file: string
  rows: number
  bytes: number
}

export interface Manifest {
  seq: number
  exportedAt: string
  format: ExportFormat
  schemaVersion: number
  counts: Partial<Record<ExportTable, number>>
  files: ExportFile[]
}

export interface ExportOptions {
  dir: string
  format: ExportFormat
  tables: readonly ExportTable[]
  /** Called after each row group with the table and the rows written so far. */
  onProgress?: (table: ExportTable, rows: number) => void
  /** Called with the snapshot's seq before any row is read (the HTTP header). */
  onSeq?: (seq: number) => void
}

interface TableSource<K extends ExportKey, R> {
  columns: ExportColumn<R>[]
  /** One page after `after`; a short one is the last. */
  read(after: ExportKey | null): Promise<K[]>
  /** The rows a page is written as; absent: the page's own rows. */
  out?: (page: K[]) => R[] | Promise<R[]>
  units(row: R): number
}

const textUnits = (...texts: Array<string | null>) =>
  texts.reduce((n, t) => n + (t?.length ?? 0), 0)

function sourceOf(
  table: ExportTable,
  snap: SnapshotReader,
  nsids: Nsids,
): TableSource<ExportKey, never> {
  const source = <K extends ExportKey, R>(s: TableSource<K, R>) =>
    s as unknown as TableSource<ExportKey, never>
  if (table === 'prompts')
    return source({
      columns: promptColumns(nsids),
      read: (after) => snap.prompts(after, PAGE_ROWS, nsids.conversation),
      units: (r) => textUnits(r.content, r.coreMemory),
    })
  if (table === 'prompt_flags')
    return source({
      columns: promptFlagColumns(nsids),
      read: (after) => snap.promptFlags(after, PAGE_ROWS),
      out: (page) =>
        page.flatMap(({ did, rkey, flags }) => {
          const names = flagsToNames(flags)
          return (names.length > 0 ? names : ['ok']).map((flag) => ({ did, rkey, flag }))
        }),
      units: (r) => r.did.length + r.rkey.length + r.flag.length,
    })
  if (table === 'revisions')
    return source({
      columns: revisionColumns(nsids),
      read: (after) => snap.revisions(after, PAGE_ROWS),
      out: (page) => withTexts(snap, page),
      units: (r) => textUnits(r.content, r.coreMemory),
    })
  return source({
    columns: recordColumns(table === 'agents' ? nsids.agent : nsids.conversation),
    read: (after) => snap.records(table, after, PAGE_ROWS),
    units: (r) => textUnits(r.record),
  })
}

/** Revisions with their content and coreMemory rebuilt from the kept texts. */
async function withTexts(snap: SnapshotReader, rows: RevisionExportRow[]): Promise<RevisionOut[]> {
  const keys = rows.flatMap((r) =>
    r.textKept ? keptHashes(r).map((hash) => ({ did: r.did, hash })) : [],
  )
  const decode = repoTextDecoder(await snap.textChains(keys))
  return rows.map((r) => {
    if (!r.textKept) return { ...r, content: r.currentContent, coreMemory: r.currentCoreMemory }
    const { content, coreMemory } = keptTexts(r, (hash) => decode(r.did, hash))
    return { ...r, content, coreMemory }
  })
}

/** Copies one table into `path`; returns the rows written. */
async function copyTable(
  source: TableSource<ExportKey, never>,
  path: string,
  o: ExportOptions & { table: ExportTable },
): Promise<number> {
  const file = openTableFile(o.format, path, source.columns)
  let group: never[] = []
  let units = 0
  let written = 0
  const flush = async () => {
    await file.write(group)
    written += group.length
    group = []
    units = 0
    o.onProgress?.(o.table, written)
  }
  for (let after: ExportKey | null = null; ; ) {
    const page = await source.read(after)
    for (const row of source.out ? await source.out(page) : (page as never[])) {
      group.push(row)
      units += source.units(row)
      if (units >= GROUP_UNITS || group.length >= GROUP_ROWS) await flush()
    }
    const last = page.at(-1)
    if (!last || page.length < PAGE_ROWS) break
    after = { did: last.did, rkey: last.rkey, rev: last.rev }
  }
  if (group.length > 0) await flush()
  await file.finish()
  return written
}

/** Writes the snapshot's tables and manifest.json into `o.dir` (which must exist). */
export async function exportSnapshot(
  db: Database,
  nsids: Nsids,
  o: ExportOptions,
): Promise<Manifest> {
  const partials: string[] = []
  // An earlier export's manifest would vouch for files this one is about to replace.
  await rm(join(o.dir, 'manifest.json'), { force: true })
  try {
    return await readSnapshot(db, async (snap) => {
      o.onSeq?.(snap.seq)
      const files: ExportFile[] = []
      for (const table of o.tables) {
        const file = `${table}.${o.format}`
        const partial = join(o.dir, `${file}.partial`)
        partials.push(partial)
        const rows = await copyTable(sourceOf(table, snap, nsids), partial, { ...o, table })
        await rename(partial, join(o.dir, file))
        files.push({ table, file, rows, bytes: (await stat(join(o.dir, file))).size })
      }
      const manifest: Manifest = {
        seq: snap.seq,
        exportedAt: new Date().toISOString(),
        format: o.format,
        schemaVersion: SCHEMA_VERSION,
        counts: Object.fromEntries(files.map((f) => [f.table, f.rows])),
        files,
      }
      await writeFile(
        join(o.dir, 'manifest.json.partial'),
        `${JSON.stringify(manifest, null, 2)}\n`,
      )
      await rename(join(o.dir, 'manifest.json.partial'), join(o.dir, 'manifest.json'))
      return manifest
    })
  } catch (err) {
    // No half-written file stays under a name that says it is whole.
    await Promise.all(partials.map((p) => rm(p, { force: true })))
    throw err
  }
}
