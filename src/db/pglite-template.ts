import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { constants, zstdCompressSync, zstdDecompressSync } from 'node:zlib'
import type { PGlite } from '@electric-sql/pglite'
import { extractSync } from 'tar'
import { DataDirError } from '../faults/errors.ts'

// PGlite's first start runs initdb inside WebAssembly, which is slow and memory-hungry
// (bench/README.md, "Figures behind the defaults"), so the repo ships the initialized,
// migrated directory as a tarball (`npm run db:template`). Migrations still run on top, so a
// template older than the newest migration stays correct.

export const TEMPLATE_FILE = fileURLToPath(
  new URL('../../drizzle/pglite-template.tar.zst', import.meta.url),
)

// A 64 MB zstd window sees the directory's three near-identical databases at once.
const WINDOW_LOG = 26
const TAR_CHUNK = 64 << 20

const unreadable = (file: string, err: unknown) =>
  new DataDirError(
    `the PGlite template ${file} cannot be read (${(err as Error).message}): restore it from git or rebuild it with npm run db:template`,
    { cause: err },
  )

function templateTar(file: string): Buffer {
  try {
    return zstdDecompressSync(readFileSync(file), {
      // One output chunk: with zlib's small default chunks the copying outlasts the decompression.
      chunkSize: TAR_CHUNK,
      params: { [constants.ZSTD_d_windowLogMax]: WINDOW_LOG },
    })
  } catch (err) {
    throw unreadable(file, err)
  }
}

/** The template as the tar PGlite's `loadDataDir` takes (an in-memory database). */
export function readTemplate(file = TEMPLATE_FILE): Blob {
  return new Blob([templateTar(file)])
}

/**
 * Writes the template's files into `pgdata`, for PGlite to open as an existing directory.
 * Not PGlite's own `loadDataDir`, which untars inside its WebAssembly memory and never
 * gives that memory back.
 */
export function extractTemplate(pgdata: string, file = TEMPLATE_FILE): void {
  const tar = templateTar(file)
  const problems: string[] = []
  mkdirSync(pgdata, { recursive: true })
  try {
    extractSync({
      input: tar,
      cwd: pgdata,
      // The template's paths are absolute ('/base/1/...'); tar makes them relative to
      // `cwd` and says so (TAR_ENTRY_INFO). Anything else is a damaged template.
      onwarn: (code: string, message: string) => {
        if (code !== 'TAR_ENTRY_INFO') problems.push(`${code}: ${message}`)
      },
    })
  } catch (err) {
    throw unreadable(file, err)
  }
  if (problems.length > 0) throw unreadable(file, new Error(problems.slice(0, 3).join('; ')))
}

/** Writes a running PGlite's data directory as a template. */
export async function writeTemplate(pg: PGlite, file = TEMPLATE_FILE): Promise<number> {
  await pg.exec('CHECKPOINT')
  const tar = Buffer.from(await (await pg.dumpDataDir('none')).arrayBuffer())
  const packed = zstdCompressSync(tar, {
    params: {
      [constants.ZSTD_c_compressionLevel]: 19,
      [constants.ZSTD_c_windowLog]: WINDOW_LOG,
      [constants.ZSTD_c_enableLongDistanceMatching]: 1,
    },
  })
  writeFileSync(file, packed)
  return packed.length
}

/**
 * Whether `pgdata` must be filled from the template, and the marker of a fill under way: a
 * marker left behind means a start died mid-fill, so the directory is filled afresh. A
 * directory with files but no PG_VERSION is not PGlite's and is never touched.
 */
export function templateNeeded(pgdata: string): { needed: boolean; marker: string } {
  const marker = `${pgdata}.loading`
  if (existsSync(marker)) {
    rmSync(pgdata, { recursive: true, force: true })
    return { needed: true, marker }
  }
  if (!existsSync(pgdata)) return { needed: true, marker }
  if (existsSync(join(pgdata, 'PG_VERSION'))) return { needed: false, marker }
  if (readdirSync(pgdata).length === 0) return { needed: true, marker }
  throw new DataDirError(
    `${pgdata} is not a PGlite data directory (it has files but no PG_VERSION): move it away, or set DATA_DIR to another directory`,
  )
}
