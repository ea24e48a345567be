import { dataToCborBlock } from '@atproto/common'
import type { Keypair } from '@atproto/crypto'
import { MemoryBlockstore, MST, signCommit, writeCarStream } from '@atproto/repo'

// A signed repo of any size whose record blocks are regenerated on demand, so a 1 GB CAR
// is streamed without being held: only the MST (a few MB) stays in memory. Blocks come in
// the order that is hardest for a streaming reader: the commit, then every record (the
// wanted ones among them), then the MST nodes last.

export interface BigRepoSpec {
  did: string
  keypair: Keypair
  /** Records of the noise collection and the size of each. */
  otherRecords: number
  otherRecordBytes: number
  /** Records in the wanted collection (`wanted`). */
  wanted: { collection: string; count: number; record: (i: number) => Record<string, unknown> }
  noiseCollection?: string
}

type Block = { cid: Awaited<ReturnType<typeof dataToCborBlock>>['cid']; bytes: Uint8Array }

export interface BigRepo {
  /** Approximate CAR size in bytes. */
  bytes: number
  wantedKeys: string[]
  car: () => AsyncIterable<Uint8Array>
}

const rkey = (i: number) => `3k${i.toString(36).padStart(11, '0')}`

export async function buildBigRepo(spec: BigRepoSpec): Promise<BigRepo> {
  const noise = spec.noiseCollection ?? 'app.bsky.feed.post'
  const pad = 'lorem ipsum '
    .repeat(Math.ceil(spec.otherRecordBytes / 12))
    .slice(0, spec.otherRecordBytes)
  const other = (i: number) => ({
    $type: noise,
    text: `${i} ${pad}`,
    createdAt: '2026-01-01T00:00:00.000Z',
  })
  const storage = new MemoryBlockstore()
  let mst = await MST.create(storage)
  const wantedKeys: string[] = []
  let bytes = 0
  for (let i = 0; i < spec.otherRecords; i++) {
    const block = await dataToCborBlock(other(i))
    bytes += block.bytes.byteLength
    mst = await mst.add(`${noise}/${rkey(i)}`, block.cid as never)
  }
  for (let i = 0; i < spec.wanted.count; i++) {
    const block = await dataToCborBlock(spec.wanted.record(i))
    bytes += block.bytes.byteLength
    const key = `${spec.wanted.collection}/${rkey(i)}`
    wantedKeys.push(key)
    mst = await mst.add(key, block.cid as never)
  }
  const { root, blocks: nodes } = await mst.getUnstoredBlocks()
  const commit = await signCommit(
    { did: spec.did, version: 3, data: root, rev: '3kbigrepo0000', prev: null },
    spec.keypair,
  )
  const commitBlock = await dataToCborBlock(commit)
  for (const e of nodes.entries()) bytes += e.bytes.byteLength
  async function* blocks(): AsyncGenerator<Block> {
    yield commitBlock as unknown as Block
    for (let i = 0; i < spec.otherRecords; i++)
      yield (await dataToCborBlock(other(i))) as unknown as Block
    for (let i = 0; i < spec.wanted.count; i++)
      yield (await dataToCborBlock(spec.wanted.record(i))) as unknown as Block
    for (const e of nodes.entries()) yield e as unknown as Block
  }
  return {
    bytes,
    wantedKeys,
    car: () => writeCarStream(commitBlock.cid as never, blocks() as never),
  }
}

/** A DID resolver that names one PDS and one signing key for every DID. */
export function fixedResolver(pdsUrl: string, signingKey: string) {
  return {
    resolve: async () => null,
    resolvePds: async () => pdsUrl,
    resolveKey: async () => signingKey,
  }
}
