import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { constants, zstdCompressSync, zstdDecompressSync } from 'node:zlib'
import type { PGlite } from '@electric-sql/pglite'
import { DataDirError } from '../errors.ts'

// PGlite's first start in an empty directory runs initdb, inside WebAssembly: seconds and
// most of a GB of RSS (bench/README.md, "Footprint"), for the same few MB every time. So the
// repo ships that directory, initialized and migrated, as a tarball (`npm run db:template`
// writes it), and a first start, a demo or a test database loads it instead. Migrations
// still run on top, so a template older than the newest migration stays correct.

export const TEMPLATE_FILE = fileURLToPath(
  new URL('../../drizzle/pglite-template.tar.zst', import.meta.url),
)

// The window zstd may use: 64 MB lets it see the three near-identical databases of the
// directory at once (a third smaller than at the default window).
const WINDOW_LOG = 26
const TAR_CHUNK = 64 << 20

/** The template as the tar PGlite's `loadDataDir` takes. */
export function readTemplate(file = TEMPLATE_FILE): Blob {
  try {
    const tar = zstdDecompressSync(readFileSync(file), {
      // One output chunk for the whole tar: with zlib's default 16 kB chunks the copying
      // took longer than the decompression itself.
      chunkSize: TAR_CHUNK,
      params: { [constants.ZSTD_d_windowLogMax]: WINDOW_LOG },
    })
    return new Blob([tar])
  } catch (err) {
    throw new DataDirError(
      `the PGlite template ${file} cannot be read (${(err as Error).message}): restore it from git or rebuild it with npm run db:template`,
      { cause: err },
    )
  }
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
 * Whether `pgdata` must be filled from the template, and the marker that says a fill is
 * under way. A marker left behind means a start died while filling: the half-written
 * directory is removed and filled again. A directory with files but no PG_VERSION is not
 * PGlite's, and is never touched.
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
