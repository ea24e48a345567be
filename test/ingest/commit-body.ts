import type { Keypair } from '@atproto/crypto'
import {
  blocksToCarFile,
  cidForRecord,
  type RecordWriteOp,
  type Repo,
  WriteOpAction,
} from '@atproto/repo'

/**
 * The next commit of `repo` as a PDS sends it on the firehose (since, prevData, ops with
 * prev for updates and deletes), signed and proven by @atproto/repo itself; the repo is
 * not advanced (`repo.applyCommit(commit)` does that).
 */
export async function commitBody(repo: Repo, kp: Keypair, writes: RecordWriteOp[], seq: number) {
  const prevData = repo.commit.data
  const ops = []
  for (const w of writes) {
    const path = `${w.collection}/${w.rkey}`
    const prev = (await repo.data.get(path)) ?? undefined
    const cid = w.action === WriteOpAction.Delete ? null : await cidForRecord(w.record)
    ops.push({ action: w.action, path, cid, ...(prev ? { prev } : {}) })
  }
  const commit = await repo.formatCommit(writes, kp)
  const body = {
    seq,
    rebase: false,
    tooBig: false,
    repo: repo.did,
    commit: commit.cid,
    rev: commit.rev,
    since: commit.since,
    prevData,
    blocks: await blocksToCarFile(commit.cid, commit.relevantBlocks),
    ops,
    blobs: [],
    time: new Date().toISOString(),
  }
  return { body, commit }
}
