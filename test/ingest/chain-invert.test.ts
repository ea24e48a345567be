import { readFileSync } from 'node:fs'
import { BlockMap, MemoryBlockstore, MST } from '@atproto/repo'
import { CID } from 'multiformats/cid'
import { describe, expect, it } from 'vitest'
import { InversionError, invertCommit } from '../../src/ingest/firehose/chain/invert.ts'

// The commit-proof fixtures of bluesky-social/atproto-interop-tests (see
// test/fixtures/interop/README.md): a tree of `keys`, a commit adding `adds` and removing
// `dels`, and the blocks a proof of that commit must carry. Undoing the commit on exactly
// those blocks must give back the root before it.

interface Fixture {
  comment: string
  leafValue: string
  keys: string[]
  adds: string[]
  dels: string[]
  rootBeforeCommit: string
  rootAfterCommit: string
  blocksInProof: string[]
}

const fixtures: Fixture[] = JSON.parse(
  readFileSync(new URL('../fixtures/interop/commit-proof-fixtures.json', import.meta.url), 'utf8'),
)

async function persist(storage: MemoryBlockstore, mst: MST): Promise<void> {
  const { blocks } = await mst.getUnstoredBlocks()
  storage.putMany(blocks)
}

async function afterTree(f: Fixture, leaf: CID) {
  const storage = new MemoryBlockstore()
  let mst = await MST.create(storage)
  for (const k of f.keys) mst = await mst.add(k, leaf)
  await persist(storage, mst)
  expect((await mst.getPointer()).toString()).toBe(f.rootBeforeCommit)
  for (const k of f.adds) mst = await mst.add(k, leaf)
  for (const k of f.dels) mst = await mst.delete(k)
  await persist(storage, mst)
  return { storage, root: await mst.getPointer() }
}

function ops(f: Fixture, leaf: CID) {
  return [
    ...f.adds.map((path) => ({ action: 'create', path, cid: leaf })),
    ...f.dels.map((path) => ({ action: 'delete', path, cid: null, prev: leaf })),
  ]
}

describe('MST inversion on the interop commit-proof fixtures', () => {
  expect(fixtures.length).toBe(6)
  for (const f of fixtures) {
    it(f.comment, async () => {
      const leaf = CID.parse(f.leafValue)
      const { storage, root } = await afterTree(f, leaf)
      expect(root.toString()).toBe(f.rootAfterCommit)
      const proof = new BlockMap()
      for (const c of f.blocksInProof) {
        const cid = CID.parse(c)
        const bytes = await storage.getBytes(cid)
        expect(bytes, `proof block ${c}`).not.toBeNull()
        proof.set(cid, bytes!)
      }
      const before = await invertCommit(proof, root, ops(f, leaf))
      expect(before.toString()).toBe(f.rootBeforeCommit)
    })
  }

  it('a proof missing one of its blocks fails with an InversionError', async () => {
    const f = fixtures[0]
    const leaf = CID.parse(f.leafValue)
    const { storage, root } = await afterTree(f, leaf)
    const proof = new BlockMap()
    // Keep the root, drop the rest: the tree below the root cannot be walked.
    const rootBytes = await storage.getBytes(root)
    proof.set(root, rootBytes!)
    await expect(invertCommit(proof, root, ops(f, leaf))).rejects.toBeInstanceOf(InversionError)
  })

  it('ops that do not match the tree are refused', async () => {
    const f = fixtures[0]
    const leaf = CID.parse(f.leafValue)
    const { storage, root } = await afterTree(f, leaf)
    const all = new BlockMap()
    for await (const c of f.blocksInProof) {
      const cid = CID.parse(c)
      all.set(cid, (await storage.getBytes(cid))!)
    }
    // An update without prev cannot be undone; a delete of a key still present is a lie;
    // two ops on one path are malformed.
    const update = [{ action: 'update', path: f.adds[0], cid: leaf }]
    await expect(invertCommit(all, root, update)).rejects.toThrow(/without prev/)
    const del = [{ action: 'delete', path: f.adds[0], cid: null, prev: leaf }]
    await expect(invertCommit(all, root, del)).rejects.toThrow(/still in the tree/)
    const twice = [...ops(f, leaf), ...ops(f, leaf)]
    await expect(invertCommit(all, root, twice)).rejects.toThrow(/two ops/)
  })
})
