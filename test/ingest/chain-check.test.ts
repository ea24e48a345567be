import { TID } from '@atproto/common'
import { type Keypair, Secp256k1Keypair } from '@atproto/crypto'
import { MemoryBlockstore, type RecordWriteOp, Repo, WriteOpAction } from '@atproto/repo'
import { beforeEach, describe, expect, it } from 'vitest'
import type { ChainHead } from '../../src/db/repo-chain.ts'
import { checkCommit, checkRev } from '../../src/ingest/firehose/chain/check-commit.ts'
import { COLLECTIONS, PROMPT } from '../helpers/ingest-kit.ts'
import { commitBody } from './commit-body.ts'

// The Sync 1.1 checks of one commit (notes/sync-1.1.md "Test cases worth writing" 2-9) on
// commits signed and proven by @atproto/repo itself, then altered the ways a relay could.

const DID = 'did:plc:chainaaaaaaaaaaaaaaaaaaa'
const record = (content: string) => ({
  $type: PROMPT,
  content,
  compiledAt: '2026-01-01T00:00:00.000Z',
})
const create = (rkey: string, content = rkey) => ({
  action: WriteOpAction.Create as const,
  collection: PROMPT as `${string}.${string}.${string}`,
  rkey,
  record: record(content),
})

let kp: Keypair
let repo: Repo
let head: ChainHead
const deps = () => ({
  resolveKey: async () => kp.did(),
  match: (c: string) => COLLECTIONS.includes(c),
})

beforeEach(async () => {
  kp = await Secp256k1Keypair.create()
  repo = await Repo.create(new MemoryBlockstore(), DID, kp, [create('a'), create('b')])
  head = {
    did: DID,
    rev: repo.commit.rev,
    data: repo.commit.data.toString(),
    state: 'synchronized',
  }
})

/** The next commit's frame body as a PDS sends it (since, prevData, ops with prev). */
async function nextCommit(writes: RecordWriteOp[]) {
  return (await commitBody(repo, kp, writes, 9)).body
}

const check = (body: Awaited<ReturnType<typeof nextCommit>>, h: ChainHead | null = head) =>
  checkCommit(deps(), body as never, h, Date.now() * 1000)

describe('checkCommit', () => {
  it('accepts a commit that continues the chain, with the new root as the chain state', async () => {
    const body = await nextCommit([
      create('c'),
      { action: WriteOpAction.Delete, collection: PROMPT, rkey: 'a' },
    ])
    const v = await check(body)
    expect(v.kind).toBe('accept')
    if (v.kind !== 'accept') return
    expect(v.legacy).toBe(false)
    expect(v.chain).toMatchObject({
      state: 'synchronized',
      rev: body.rev,
      commit: body.commit.toString(),
    })
    expect(v.events.map((e) => `${e.event} ${e.rkey}`)).toEqual(['create c', 'delete a'])
  })

  it('breaks on since, on prevData, and on ops that hide a change (inversion)', async () => {
    const body = await nextCommit([
      create('c'),
      { action: WriteOpAction.Delete, collection: PROMPT, rkey: 'a' },
    ])
    expect(
      (
        (await check({ ...body, since: TID.fromTime(Date.now() * 1000 - 60e6, 0).toString() })) as {
          reason?: string
        }
      ).reason,
    ).toBe('since')
    // A since after the commit's own rev: the chain would run backwards.
    expect(await check({ ...body, since: TID.nextStr(body.rev) })).toMatchObject({
      reason: 'rev_order',
    })
    const otherRoot = body.commit
    expect(((await check({ ...body, prevData: otherRoot })) as { reason?: string }).reason).toBe(
      'prev_data',
    )
    // Right prevData, but the delete left out of the ops: only inversion sees it.
    const hidden = { ...body, ops: body.ops.filter((o) => o.action !== 'delete') }
    expect((await check(hidden)).kind).toBe('break')
    expect(((await check(hidden)) as { reason?: string }).reason).toBe('inversion')
  })

  it('a legacy commit (no prevData, no prev) is accepted as legacy; prev without prevData is a break', async () => {
    const body = await nextCommit([create('c')])
    const legacy = await check({ ...body, prevData: undefined } as never)
    expect(legacy.kind).toBe('accept')
    expect((legacy as { legacy?: boolean }).legacy).toBe(true)
    const upd = await nextCommit([
      { ...create('a', 'again'), action: WriteOpAction.Update } as RecordWriteOp,
    ])
    const noPrevData = await check({ ...upd, prevData: undefined } as never)
    expect((noPrevData as { reason?: string }).reason).toBe('inversion')
    // An update without prev, prevData present: inversion is impossible, not legacy.
    const noPrev = { ...upd, ops: upd.ops.map(({ prev: _, ...o }) => o) }
    expect(((await check(noPrev as never)) as { reason?: string }).reason).toBe('inversion')
  })

  it('drops replays, waits while desynchronized, refuses future revs and envelope lies', async () => {
    const body = await nextCommit([create('c')])
    expect((await check(body, { ...head, rev: body.rev })).kind).toBe('replay')
    expect((await check(body, { ...head, state: 'desynchronized' })).kind).toBe('waiting')
    const future = TID.fromTime((Date.now() + 10 * 60_000) * 1000, 0).toString()
    expect(await check({ ...body, rev: future })).toMatchObject({
      kind: 'reject',
      reason: 'future_rev',
    })
    expect(
      checkRev(TID.fromTime((Date.now() + 60_000) * 1000, 0).toString(), Date.now()),
    ).toBeNull()
    expect(await check({ ...body, rev: 'not-a-tid' })).toMatchObject({
      kind: 'reject',
      reason: 'invalid',
    })
    // A rev the signed commit does not carry: refused, no resync (it would not help).
    const later = TID.nextStr(body.rev)
    expect(await check({ ...body, rev: later })).toMatchObject({
      kind: 'reject',
      reason: 'invalid',
    })
    // Another key signed it: refused.
    const other = await Secp256k1Keypair.create()
    const forged = await checkCommit(
      { ...deps(), resolveKey: async () => other.did() },
      body as never,
      head,
      0,
    )
    expect(forged).toMatchObject({ kind: 'reject', reason: 'invalid' })
  })

  it('first sighting (no stored state): accepted as ground truth', async () => {
    const body = await nextCommit([create('c')])
    expect((await check({ ...body, prevData: body.commit }, null)).kind).toBe('accept')
  })
})
