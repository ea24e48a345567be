import {
  type Commit,
  cborToLex,
  cborToLexRecord,
  def,
  nodeDataDef,
  readCarStream,
} from '@atproto/repo'
import { AppError } from '../../faults/errors.ts'
import type { RepoSnapshotEvent } from '../../model/events.ts'
import { recordJson } from '../lex-json.ts'
import { type CidLike, MissingTreeBlockError, type NodeData, SparseMstIndex } from './mst-index.ts'

// A getRepo CAR read as a stream (@atproto/repo's `readCarStream` parses and hash-checks),
// so a repo costs its wanted records plus a sparse MST index (mst-index.ts), never the whole
// repo: kept are the commit, MST nodes, and record blocks under a wanted key (known from the
// index, or from a `$type` naming a wanted collection when the block comes first).

export type CarRejectReason =
  | 'too_large'
  | 'block_too_large'
  | 'truncated'
  | 'bad_block_hash'
  | 'incomplete'
  | 'bad_car'

/** An invalid CAR: permanent (AppError's `retryable` false), the same bytes fail again. */
export class CarStreamError extends AppError {
  readonly reason: CarRejectReason
  constructor(reason: CarRejectReason, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.reason = reason
  }
}

export interface CarStreamLimits {
  /** The whole body (default 4 GiB): past it the stream is cut. */
  maxBytes?: number
  /** One block (default 4 MiB; records are at most 1 MB, MST nodes far less). */
  maxBlockBytes?: number
  /** Wanted-collection record blocks held at once (default 256 MiB). */
  maxRecordBytes?: number
}

export interface StreamedRepo {
  root: CidLike
  commit: Commit
  records: RepoSnapshotEvent['records']
  /** Wanted records JSON cannot hold (an integer beyond 2^53), left out of `records`. */
  skipped: NonNullable<RepoSnapshotEvent['skipped']>
  stats: { bytes: number; blocks: number; nodes: number; keptRecordBytes: number }
}

type Block = { cid: CidLike; bytes: Uint8Array }

export async function readRepoCar(
  body: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  collections: string[],
  limits: CarStreamLimits = {},
): Promise<StreamedRepo> {
  const meter = new ByteMeter(
    limits.maxBytes ?? 4 * 1024 ** 3,
    limits.maxBlockBytes ?? 4 * 1024 ** 2,
  )
  const kept: Kept = {
    index: new SparseMstIndex(collections),
    records: new Map(),
    recordBytes: 0,
    maxRecordBytes: limits.maxRecordBytes ?? 256 * 1024 * 1024,
    commit: null,
    blocks: 0,
  }
  let root: CidLike
  try {
    root = await readBlocks(meter.wrap(body), meter, kept)
  } catch (err) {
    throw asCarError(err, meter.ended)
  }
  const { commit, index } = kept
  if (!commit) throw new CarStreamError('incomplete', `commit block ${root.toString()} missing`)
  let leaves: ReturnType<SparseMstIndex['walk']>
  try {
    leaves = index.walk(commit.data)
  } catch (err) {
    if (err instanceof MissingTreeBlockError) throw new CarStreamError('incomplete', err.message)
    throw err
  }
  const records: StreamedRepo['records'] = []
  const skipped: StreamedRepo['skipped'] = []
  for (const leaf of leaves) {
    const r = toRecord(leaf.key, leaf.cid, kept.records)
    if ('reason' in r) skipped.push(r)
    else records.push(r)
  }
  const stats = {
    bytes: meter.pulled,
    blocks: kept.blocks,
    nodes: index.nodeCount,
    keptRecordBytes: kept.recordBytes,
  }
  return { root, commit, records, skipped, stats }
}

/** What the pass over the blocks keeps: the commit, the sparse index, the wanted records. */
interface Kept {
  index: SparseMstIndex
  records: Map<string, Uint8Array>
  recordBytes: number
  maxRecordBytes: number
  commit: Commit | null
  blocks: number
}

/** Reads every block into `kept`; returns the CAR's root. */
async function readBlocks(
  body: AsyncIterable<Uint8Array>,
  meter: ByteMeter,
  kept: Kept,
): Promise<CidLike> {
  const car = await readCarStream(body)
  if (car.roots.length !== 1)
    throw new CarStreamError('bad_car', `CAR has ${car.roots.length} roots, not 1`)
  const root = car.roots[0]
  const rootStr = root.toString()
  for await (const block of car.blocks as AsyncIterable<Block>) {
    meter.consumed(block.cid.bytes.byteLength + block.bytes.byteLength)
    kept.blocks++
    const cidStr = block.cid.toString()
    if (cidStr === rootStr) kept.commit = parseCommit(block.bytes)
    else keepBlock(kept, block, cidStr)
  }
  return root
}

function keepBlock(kept: Kept, block: Block, cidStr: string): void {
  const kind = classify(block.bytes, kept.index, cidStr)
  if (kind === 'skip') return
  if (kind === 'record') {
    kept.recordBytes += block.bytes.byteLength
    if (kept.recordBytes > kept.maxRecordBytes)
      throw new CarStreamError('too_large', `wanted records exceed ${kept.maxRecordBytes} bytes`)
    kept.records.set(cidStr, block.bytes)
    return
  }
  kept.index.add(block.cid, kind)
}

function parseCommit(bytes: Uint8Array): Commit {
  // def.commit is the v3 shape: a v2 commit has no rev to order writes by.
  const res = def.commit.schema.safeParse(cborToLex(bytes))
  if (!res.success) throw new CarStreamError('bad_car', 'root block is not a v3 commit')
  return res.data
}

/** An MST node, a record block worth keeping, or neither. */
function classify(
  bytes: Uint8Array,
  index: SparseMstIndex,
  cid: string,
): NodeData | 'record' | 'skip' {
  if (index.wantedValues.has(cid)) return 'record'
  let value: unknown
  try {
    value = cborToLex(bytes)
  } catch {
    return 'skip'
  }
  if (typeof value !== 'object' || value === null) return 'skip'
  const type = (value as { $type?: unknown }).$type
  if (typeof type === 'string') return index.isWantedKey(`${type}/`) ? 'record' : 'skip'
  const node = nodeDataDef.schema.safeParse(value)
  return node.success ? (node.data as NodeData) : 'skip'
}

function toRecord(
  key: string,
  cid: CidLike,
  kept: Map<string, Uint8Array>,
): StreamedRepo['records'][number] | StreamedRepo['skipped'][number] {
  const slash = key.indexOf('/')
  const collection = key.slice(0, slash)
  const bytes = kept.get(cid.toString())
  if (!bytes)
    throw new CarStreamError(
      'incomplete',
      `record block of ${key} missing (or its $type is not ${collection})`,
    )
  const record = cborToLexRecord(bytes)
  if (record.$type !== collection)
    throw new CarStreamError('bad_car', `record ${key} has $type ${String(record.$type)}`)
  const rkey = key.slice(slash + 1)
  const json = recordJson(record)
  if ('unrepresentable' in json) return { collection, rkey, reason: json.unrepresentable }
  return { collection, rkey, cid: cid.toString(), record: json.json }
}

function asCarError(err: unknown, ended: boolean): CarStreamError | Error {
  if (err instanceof CarStreamError) return err
  const message = (err as Error).message ?? String(err)
  // The parser reads what it is given: a stream that stopped inside a block shows up as a
  // short block (bad hash or CID) or a cut varint, so the end of input decides.
  if (ended)
    return new CarStreamError('truncated', `CAR ended inside a block: ${message}`, { cause: err })
  if (message.startsWith('Not a valid CID for bytes'))
    return new CarStreamError('bad_block_hash', message, { cause: err })
  if ((err as Error).name === 'TimeoutError' || (err as Error).name === 'AbortError')
    return err as Error
  if (err instanceof TypeError) return err
  return new CarStreamError('bad_car', message, { cause: err })
}

/** Cuts the body past `maxBytes`, and a block past `maxBlockBytes` before it is buffered. */
class ByteMeter {
  pulled = 0
  ended = false
  #consumed = 0
  readonly maxBytes: number
  readonly maxBlockBytes: number
  constructor(maxBytes: number, maxBlockBytes: number) {
    this.maxBytes = maxBytes
    this.maxBlockBytes = maxBlockBytes
  }

  consumed(n: number): void {
    // Plus the block's length prefix (at most 5 bytes for a 4 MiB block).
    this.#consumed += n + 5
  }

  async *wrap(body: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): AsyncGenerator<Uint8Array> {
    for await (const chunk of body) {
      this.pulled += chunk.byteLength
      if (this.pulled > this.maxBytes)
        throw new CarStreamError(
          'too_large',
          `repo is more than the limit of ${this.maxBytes} bytes`,
        )
      if (this.pulled - chunk.byteLength - this.#consumed > this.maxBlockBytes)
        throw new CarStreamError(
          'block_too_large',
          `a block is larger than ${this.maxBlockBytes} bytes`,
        )
      yield chunk
    }
    this.ended = true
  }
}
