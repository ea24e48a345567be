import { type BlockMap, MemoryBlockstore, MST } from '@atproto/repo'

// Sync 1.1's "inductive firehose" check: the commit's partial MST with every op undone must give
// back prevData; @atproto/repo's MST does the tree work, this maps each op to its inverse.

type CID = Parameters<MST['add']>[1]

export interface InvertibleOp {
  action: string
  path: string
  cid?: CID | null
  prev?: CID | null
}

/** Why a commit could not be inverted (a chain break of reason `inversion`). */
export class InversionError extends Error {
  name = 'InversionError'
}

/** The MST root before the commit; each op is also checked against the new tree. */
export async function invertCommit(blocks: BlockMap, data: CID, ops: InvertibleOp[]): Promise<CID> {
  const paths = new Set<string>()
  for (const op of ops) {
    if (paths.has(op.path)) throw new InversionError(`two ops on ${op.path}`)
    paths.add(op.path)
  }
  let mst = MST.load(new MemoryBlockstore(blocks), data)
  try {
    for (const op of ops) mst = await undo(mst, op)
    return await mst.getPointer()
  } catch (err) {
    if (err instanceof InversionError) throw err
    throw new InversionError(`inverting the commit: ${(err as Error).message}`, { cause: err })
  }
}

async function undo(mst: MST, op: InvertibleOp): Promise<MST> {
  const now = await mst.get(op.path)
  switch (op.action) {
    case 'create':
      if (!op.cid || !now?.equals(op.cid))
        throw new InversionError(`create ${op.path}: not in the tree`)
      if (op.prev) throw new InversionError(`create ${op.path} carries prev`)
      return mst.delete(op.path)
    case 'update':
      if (!op.cid || !now?.equals(op.cid))
        throw new InversionError(`update ${op.path}: not in the tree`)
      if (!op.prev) throw new InversionError(`update ${op.path} without prev`)
      return mst.update(op.path, op.prev)
    case 'delete':
      if (now) throw new InversionError(`delete ${op.path}: still in the tree`)
      if (!op.prev) throw new InversionError(`delete ${op.path} without prev`)
      return mst.add(op.path, op.prev)
    default:
      throw new InversionError(`unknown action ${op.action} on ${op.path}`)
  }
}
