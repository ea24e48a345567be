import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { buildFrames, type FrameOptions, type FrameSet } from './frames.ts'

// Built frame sets on disk, keyed by what they were built from: building ~100,000 signed
// commits takes a couple of minutes, reading them back well under a second.

// node_modules/.cache: the usual home of build caches, ignored by git and the linters.
const CACHE = fileURLToPath(
  new URL('../../../node_modules/.cache/prompt-appview-bench/', import.meta.url),
)
const VERSION = 4

/** Frames stored as [u32 length][frame] one after another. */
export function readFramesFile(path: string): Uint8Array[] {
  const buf = readFileSync(path)
  const frames: Uint8Array[] = []
  for (let at = 0; at < buf.length; ) {
    const len = buf.readUInt32BE(at)
    frames.push(new Uint8Array(buf.buffer, buf.byteOffset + at + 4, len))
    at += 4 + len
  }
  return frames
}

/**
 * The frames for `o`, from the cache when an identical set was built before; `path` is the
 * frames file (for the server process).
 */
export async function loadOrBuildFrames(
  o: FrameOptions,
  log: (m: string) => void,
): Promise<FrameSet & { path: string }> {
  const id = createHash('sha256')
    .update(JSON.stringify({ ...o, v: VERSION }))
    .digest('hex')
    .slice(0, 16)
  const base = `${CACHE}firehose-${id}`
  const path = `${base}.bin`
  if (existsSync(`${base}.json`) && existsSync(path)) {
    const meta = JSON.parse(readFileSync(`${base}.json`, 'utf8')) as Omit<FrameSet, 'frames'>
    const frames = readFramesFile(path)
    log(`loaded ${frames.length} cached frames (${path})`)
    return { ...meta, frames, path }
  }
  const set = await buildFrames(o, log)
  mkdirSync(CACHE, { recursive: true })
  const parts: Buffer[] = []
  for (const f of set.frames) {
    const len = Buffer.alloc(4)
    len.writeUInt32BE(f.length)
    parts.push(len, Buffer.from(f.buffer, f.byteOffset, f.length))
  }
  writeFileSync(`${base}.bin.tmp`, Buffer.concat(parts))
  const { frames: _f, ...meta } = set
  writeFileSync(`${base}.json`, JSON.stringify(meta))
  renameSync(`${base}.bin.tmp`, path)
  return { ...set, path }
}
