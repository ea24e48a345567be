import { mkdir } from 'node:fs/promises'
import { resolve } from 'node:path'
import { type Config, ConfigError, nsidsOf } from '../config/config.ts'
import type { ExportTable } from '../db/read/export.ts'
import type { ExportFormat } from '../export/files.ts'
import { exportSnapshot } from '../export/snapshot.ts'
import { DataDirLockedError } from '../faults/errors.ts'
import { openRuntime } from './runtime.ts'

// `prompt-appview export --out DIR [--format parquet|ndjson] [--revisions]` (SPEC 13): one
// snapshot of the visible state into DIR, progress logged as it goes, the manifest last.

export interface ExportCommandOptions {
  out: string | null
  format: string
  revisions: boolean
}

const PROGRESS_EVERY_MS = 5000

const STATE: ExportTable[] = ['prompts', 'prompt_flags', 'conversations', 'agents']
/** The tables written: the visible state, and with --revisions every revision. */
const tablesOf = (o: ExportCommandOptions): ExportTable[] =>
  o.revisions ? [...STATE, 'revisions'] : STATE

export async function exportCommand(config: Config, o: ExportCommandOptions): Promise<number> {
  if (!o.out) throw new ConfigError(['--out DIR is required: the directory the snapshot goes to'])
  if (o.format !== 'parquet' && o.format !== 'ndjson')
    throw new ConfigError([`--format=${JSON.stringify(o.format)}: must be parquet or ndjson`])
  const dir = resolve(o.out)
  await mkdir(dir, { recursive: true })
  const rt = await openRuntime(config, { migrate: true }).catch((err: unknown) => {
    throw err instanceof DataDirLockedError ? heldBy(config, o, dir, err) : err
  })
  const { logger, db } = rt.ctx
  const tables = tablesOf(o)
  let lastLog = performance.now()
  const t0 = lastLog
  try {
    const manifest = await exportSnapshot(db, nsidsOf(config), {
      dir,
      format: o.format as ExportFormat,
      tables,
      onSeq: (seq) => logger.info({ dir, seq, tables }, 'export: snapshot taken'),
      onProgress: (table, rows) => {
        if (performance.now() - lastLog < PROGRESS_EVERY_MS) return
        lastLog = performance.now()
        logger.info({ table, rows }, 'export: writing')
      },
    })
    const seconds = Number(((performance.now() - t0) / 1000).toFixed(1))
    logger.info({ dir, seq: manifest.seq, counts: manifest.counts, seconds }, 'export: done')
    return 0
  } finally {
    await rt.close()
  }
}

/**
 * The embedded database is held by a running server: the error says which commands take the
 * same tables from that server over HTTP, at the address these settings give it.
 */
function heldBy(
  config: Config,
  o: ExportCommandOptions,
  dir: string,
  err: DataDirLockedError,
): DataDirLockedError {
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host
  const base = `http://${host.includes(':') ? `[${host}]` : host}:${config.port}/v1/export`
  const curls = tablesOf(o)
    .map((t) => `  curl -fsS -o ${dir}/${t}.${o.format} ${base}/${t}.${o.format}`)
    .join('\n')
  return new DataDirLockedError(
    `${err.message}\nStop that process and run export again for one snapshot of every table, or take the tables from the running server over HTTP (each its own snapshot; its seq is in the x-snapshot-seq header):\n${curls}`,
    { cause: err },
  )
}
