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
  type PromptFlagOut,
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

interface TableSource<R> {
  columns: ExportColumn<R>[]
  /** One page after `after`, and the key the next page starts after (null: the last page). */
  page(after: ExportKey | null): Promise<{ rows: R[]; last: ExportKey | null }>
  units(row: R): number
}

/** Where the page after `rows` starts; null when `rows` was the last page (a short one). */
const lastKey = (rows: Array<{ did: string; rkey: string; rev?: string }>): ExportKey | null => {
  const r = rows.at(-1)
  return r && rows.length >= PAGE_ROWS ? { did: r.did, rkey: r.rkey, rev: r.rev } : null
}

const textUnits = (...texts: Array<string | null>) =>
  texts.reduce((n, t) => n + (t?.length ?? 0), 0)

function sourceOf(table: ExportTable, snap: SnapshotReader, nsids: Nsids): TableSource<never> {
  const source = <R>(s: TableSource<R>) => s as unknown as TableSource<never>
  if (table === 'prompts')
    return source({
      columns: promptColumns(nsids),
      page: async (after) => {
        const rows = await snap.prompts(after, PAGE_ROWS, nsids.conversation)
        return { rows, last: lastKey(rows) }
      },
      units: (r) => textUnits(r.content, r.coreMemory),
    })
  if (table === 'prompt_flags')
    return source<PromptFlagOut>({
      columns: promptFlagColumns(nsids),
      page: async (after) => {
        const rows = await snap.promptFlags(after, PAGE_ROWS)
        const out = rows.flatMap(({ did, rkey, flags }) => {
          const names = flagsToNames(flags)
          return (names.length > 0 ? names : ['ok']).map((flag) => ({ did, rkey, flag }))
        })
        return { rows: out, last: lastKey(rows) }
      },
      units: (r) => r.did.length + r.rkey.length + r.flag.length,
    })
  if (table === 'revisions')
    return source({
      columns: revisionColumns(nsids),
      page: async (after) => {
        const rows = await snap.revisions(after, PAGE_ROWS)
        return { rows: await withTexts(snap, rows), last: lastKey(rows) }
      },
      units: (r) => textUnits(r.content, r.coreMemory),
    })
  return source({
    columns: recordColumns(table === 'agents' ? nsids.agent : nsids.conversation),
    page: async (after) => {
      const rows = await snap.records(table, after, PAGE_ROWS)
      return { rows, last: lastKey(rows) }
    },
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
  source: TableSource<never>,
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
    const { rows, last } = await source.page(after)
    for (const row of rows) {
      group.push(row)
      units += source.units(row)
      if (units >= GROUP_UNITS || group.length >= GROUP_ROWS) await flush()
    }
    if (last === null) break
    after = last
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
