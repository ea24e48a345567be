import { TID } from '@atproto/common'
import type { CommitEvent } from '../../src/model/events.ts'
import {
  AGENT,
  agentRecord,
  CONVERSATION,
  conversationRecord,
  PROMPT,
  promptRecord,
} from './ingest-kit.ts'
import type { TestAccount, TestNetwork } from './network.ts'

/** A commit event as the write responses predict it (the record only where checked). */
export type ExpectedCommit = Omit<CommitEvent, 'timeUs' | 'record'> & { record?: unknown }

export interface Scenario {
  alice: TestAccount
  bob: TestAccount
  /** In firehose order. */
  expected: ExpectedCommit[]
}

const rkeyOf = (uri: string) => uri.split('/').pop()!

/**
 * Writes through every kind of repo write (createRecord, putRecord, applyWrites with a
 * mixed batch, deleteRecord) with other-collection noise between, then changes a handle
 * and bob's hosting status: deactivated, reactivated, taken down.
 */
export async function writeScenario(net: TestNetwork): Promise<Scenario> {
  const alice = await net.createAccount('alice')
  const bob = await net.createAccount('bob')
  const expected: ExpectedCommit[] = []
  const repo = alice.did
  const api = alice.agent.com.atproto.repo
  const post = { $type: 'app.bsky.feed.post', text: 'noise', createdAt: new Date().toISOString() }
  const expect = (
    did: string,
    collection: string,
    rkey: string,
    rev: string,
    op: CommitEvent['op'],
    cid: string | null,
    record?: unknown,
  ) =>
    expected.push({
      kind: 'commit',
      did,
      collection,
      rkey,
      rev,
      op,
      cid,
      ...(record ? { record } : {}),
    })

  const ag = await api.createRecord({
    repo,
    collection: AGENT,
    record: agentRecord('You are {{x}}'),
  })
  expect(repo, AGENT, rkeyOf(ag.data.uri), ag.data.commit!.rev, 'create', ag.data.cid)
  await api.createRecord({ repo, collection: 'app.bsky.feed.post', record: post })

  const rkey = TID.nextStr()
  // A link and bytes in a record: lex-JSON must carry them as $link / $bytes.
  const convRecord = {
    ...conversationRecord(ag.data.uri),
    ref: { $link: ag.data.cid },
    blob: { $bytes: 'AQIDBA' },
  }
  const conv = await api.createRecord({ repo, collection: CONVERSATION, rkey, record: convRecord })
  expect(repo, CONVERSATION, rkey, conv.data.commit!.rev, 'create', conv.data.cid, convRecord)
  const p1 = await api.putRecord({
    repo,
    collection: PROMPT,
    rkey,
    record: promptRecord(repo, rkey, ag.data.uri, 'v1'),
  })
  expect(repo, PROMPT, rkey, p1.data.commit!.rev, 'create', p1.data.cid)

  const rkey2 = TID.nextStr()
  const batch = await api.applyWrites({
    repo,
    writes: [
      {
        $type: 'com.atproto.repo.applyWrites#update',
        collection: PROMPT,
        rkey,
        value: promptRecord(repo, rkey, ag.data.uri, 'v2'),
      },
      {
        $type: 'com.atproto.repo.applyWrites#create',
        collection: 'app.bsky.feed.post',
        value: post,
      },
      {
        $type: 'com.atproto.repo.applyWrites#create',
        collection: CONVERSATION,
        rkey: rkey2,
        value: conversationRecord(ag.data.uri),
      },
    ],
  })
  const results = batch.data.results as Array<{ cid?: string }>
  expect(repo, PROMPT, rkey, batch.data.commit!.rev, 'update', results[0].cid!)
  expect(repo, CONVERSATION, rkey2, batch.data.commit!.rev, 'create', results[2].cid!)
  const del = await api.deleteRecord({ repo, collection: CONVERSATION, rkey: rkey2 })
  expect(repo, CONVERSATION, rkey2, del.data.commit!.rev, 'delete', null)

  await bob.agent.com.atproto.repo.createRecord({
    repo: bob.did,
    collection: 'app.bsky.feed.post',
    record: post,
  })
  const bc = await bob.agent.com.atproto.repo.createRecord({
    repo: bob.did,
    collection: CONVERSATION,
    record: conversationRecord(ag.data.uri),
  })
  expect(bob.did, CONVERSATION, rkeyOf(bc.data.uri), bc.data.commit!.rev, 'create', bc.data.cid)

  await alice.agent.com.atproto.identity.updateHandle({ handle: 'alice2.test' })
  await net.deactivate(bob.did)
  await net.activate(bob.did)
  await net.takedown(bob.did)
  return { alice, bob, expected }
}
