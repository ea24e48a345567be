// Most firehose frames are commits to other collections, only a new cursor here: this reads
// just their seq and time, without decoding the blocks (a frame whose raw bytes lack every
// wanted collection's name has no op of ours), and hands anything unusual to the full path.

import { CID } from 'multiformats/cid'

export interface SkimmedCommit {
  seq: number
  time: string | null
  /** The repo's DID: a tracked repo's commit is verified even with no wanted op. */
  repo: string
}

/** Byte patterns every wanted op path holds one of: a specific common namespace, or each name. */
export function collectionNeedles(collections: string[]): Buffer[] {
  if (collections.length === 0) return []
  let prefix = collections[0]
  for (const c of collections) {
    let i = 0
    while (i < prefix.length && i < c.length && prefix[i] === c[i]) i++
    prefix = prefix.slice(0, i)
  }
  const namespace = prefix.slice(0, prefix.lastIndexOf('.') + 1)
  const names = namespace.split('.').length > 3 ? [namespace] : collections
  return names.map((n) => Buffer.from(n, 'utf8'))
}

/** The seq and time of a well-formed `#commit` frame that contains no needle, else null. */
export function skimUnmatchedCommit(frame: Uint8Array, needles: Buffer[]): SkimmedCommit | null {
  if (needles.length === 0) return null
  const buf = Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength)
  for (const n of needles) if (buf.indexOf(n) !== -1) return null
  try {
    const r = new Reader(frame)
    if (!isCommitHeader(r)) return null
    return readCommitBody(r)
  } catch {
    return null // truncated or odd CBOR: the full decoder reports it
  }
}

function isCommitHeader(r: Reader): boolean {
  let op: number | null = null
  let t: string | null = null
  const keys = new Set<string>()
  const n = r.mapLength()
  for (let i = 0; i < n; i++) {
    const key = r.key(keys)
    if (key === 'op' && r.peekMajor() === 0) op = r.uint()
    else if (key === 't' && r.peekMajor() === 3) t = r.text()
    else r.skip()
  }
  return op === 1 && t === '#commit'
}

// The keys the full path requires of a commit body, with the CBOR major type each must have.
const REQUIRED: Record<string, number> = { repo: 3, rev: 3, blocks: 2, commit: 6, ops: 4 }

interface BodyFields {
  seq: number | null
  time: string | null
  repo: string | null
  opsOk: boolean
  /** REQUIRED keys present with their major type. */
  seen: Set<string>
}

function readCommitBody(r: Reader): SkimmedCommit | null {
  const f: BodyFields = { seq: null, time: null, repo: null, opsOk: false, seen: new Set() }
  const keys = new Set<string>()
  const n = r.mapLength()
  for (let i = 0; i < n; i++) readBodyField(r, r.key(keys), f)
  const { seq, time, repo } = f
  if (r.pos !== r.bytes.length || seq === null || !Number.isSafeInteger(seq)) return null
  return f.opsOk && repo !== null && f.seen.size === Object.keys(REQUIRED).length
    ? { seq, time, repo }
    : null
}

function readBodyField(r: Reader, key: string, f: BodyFields): void {
  const major = r.peekMajor()
  if (key === 'seq' && major === 0) f.seq = r.uint()
  else if (key === 'time' && major === 3) f.time = r.text()
  else if (key === 'repo' && major === 3) {
    f.repo = r.text()
    f.seen.add(key)
  } else if (key === 'ops' && major === 4) {
    f.opsOk = opsWellFormed(r)
    f.seen.add(key)
  } else {
    if (REQUIRED[key] === major) f.seen.add(key)
    r.skip()
  }
}

/** Every op is a map whose `path` and `action` are text, as the full path requires. */
function opsWellFormed(r: Reader): boolean {
  let ok = true
  const n = r.arrayLength()
  for (let i = 0; i < n; i++) {
    if (r.peekMajor() !== 5) {
      r.skip()
      ok = false
      continue
    }
    let path = false
    let action = false
    const keys = new Set<string>()
    const m = r.mapLength()
    for (let j = 0; j < m; j++) {
      const key = r.key(keys)
      const isText = r.peekMajor() === 3
      if (key === 'path') path = isText
      else if (key === 'action') action = isText
      r.skip()
    }
    ok &&= path && action
  }
  return ok
}

// Additional info 24..27: the head's argument follows in 1, 2, 4 or 8 bytes, and is at
// least the smallest value the next shorter head could not hold.
const HEAD_SIZES: readonly number[] = [1, 2, 4, 8]
const HEAD_MINIMA: readonly number[] = [24, 0x100, 0x10000, 0x100000000]

/** Just the CBOR this needs, as strict as the full DAG-CBOR decoder; the rest throws. */
class Reader {
  pos = 0
  readonly bytes: Uint8Array
  constructor(bytes: Uint8Array) {
    this.bytes = bytes
  }

  peekMajor(): number {
    return this.#byte(this.pos) >> 5
  }

  /** Reads a head; returns the major type and its argument. */
  #head(): [number, number] {
    const b = this.#byte(this.pos++)
    const major = b >> 5
    const info = b & 0x1f
    if (info < 24) return [major, info]
    if (major === 7) throw new Error('floats and extended simple values: full path')
    const size = HEAD_SIZES[info - 24]
    if (size === undefined) throw new Error('indefinite length or reserved info')
    let v = 0
    for (let i = 0; i < size; i++) v = v * 256 + this.#byte(this.pos++)
    // Strict decoding refuses a value that fits a shorter head.
    if (v < HEAD_MINIMA[info - 24]) throw new Error('non-minimal head')
    return [major, v]
  }

  #byte(i: number): number {
    const b = this.bytes[i]
    if (b === undefined) throw new Error('truncated')
    return b
  }

  #expect(major: number): number {
    const [m, v] = this.#head()
    if (m !== major) throw new Error(`expected major type ${major}, got ${m}`)
    return v
  }

  #take(len: number): Uint8Array {
    const end = this.pos + len
    if (end > this.bytes.length) throw new Error('truncated')
    const out = this.bytes.subarray(this.pos, end)
    this.pos = end
    return out
  }

  uint(): number {
    return this.#expect(0)
  }
  arrayLength(): number {
    return this.#expect(4)
  }
  mapLength(): number {
    return this.#expect(5)
  }
  text(): string {
    const b = this.#take(this.#expect(3))
    return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8')
  }
  /** A map key, refused if the map already had it. */
  key(seen: Set<string>): string {
    const key = this.text()
    if (seen.has(key)) throw new Error('duplicate map key')
    seen.add(key)
    return key
  }

  /** Skips one whole item, checking it as the full decoder would. */
  skip(): void {
    const [major, v] = this.#head()
    switch (major) {
      case 2:
      case 3:
        this.#take(v)
        return
      case 4:
        for (let i = 0; i < v; i++) this.skip()
        return
      case 5: {
        const keys = new Set<string>()
        for (let i = 0; i < v; i++) {
          this.key(keys)
          this.skip()
        }
        return
      }
      case 6: {
        if (v !== 42) throw new Error(`tag ${v} is not a CID`)
        const b = this.#take(this.#expect(2))
        if (b[0] !== 0) throw new Error('CID without its 0x00 prefix')
        CID.decode(b.subarray(1))
        return
      }
      case 7:
        // false, true, null; undefined (23) and the rest go the full way.
        if (v < 20 || v > 22) throw new Error('unsupported simple value')
        return
      default:
      // Majors 0 and 1: integers are all head.
    }
  }
}
