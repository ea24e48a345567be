import { sql } from 'drizzle-orm'
import { createSource } from '../../src/cli/create-source.ts'
import type { AppContext } from '../../src/context/context.ts'
import type { Database } from '../../src/db/client.ts'
import { IngestPipeline } from '../../src/indexer/pipeline.ts'
import { seqCursor } from '../../src/model/cursor.ts'
import { waitFor } from './cli.ts'
import { testContext } from './context.ts'
import { sha256 } from './events.ts'
import { AGENT, COLLECTIONS, CONVERSATION, PROMPT } from './ingest-kit.ts'
import { agentRecord, conversationRecord, promptRecord } from './letta-records.ts'
import type { TestAccount, TestNetwork } from './network.ts'

// The production firehose wiring (createSource, the pipeline) reading a relay URL, plus the
// comparisons the Sync 1.1 tests end with: what we store against what the PDS holds.

export interface Rig {
  ctx: AppContext
  /** The source's cursor key. */
  key: string
  stop(): Promise<void>
}

export async function startIngest(
  db: Database,
  net: TestNetwork,
  relayUrl: string,
  cursor: number | null = 0,
): Promise<Rig> {
  const ctx = testContext(db, {
    SOURCE: 'firehose',
    RELAY_URL: relayUrl,
    PLC_URL: net.plcUrl,
    ALLOW_PRIVATE_NETWORK: 'true',
  })
  const { source } = await createSource(ctx)
  const pipeline = new IngestPipeline(ctx, {
    source: 'firehose',
    key: source.key,
    provenance: source.provenance,
    batchSize: 50,
    batchDelayMs: 5,
    queueSize: 200,
    cursorIntervalMs: 20,
  })
  const abort = new AbortController()
  const writer = pipeline.run()
  const start = cursor === null ? null : seqCursor(cursor)
  const reader = source.run(pipeline, start, abort.signal).finally(() => pipeline.stop())
  return {
    ctx,
    key: source.key,
    async stop() {
      abort.abort()
      await reader
      await writer
    },
  }
}

type Entry = { collection: string; rkey: string; cid: string }
const order = (a: Entry, b: Entry) =>
  `${a.collection}/${a.rkey}`.localeCompare(`${b.collection}/${b.rkey}`)

/** The PDS's own records of the three collections (listRecords). */
export async function pdsRecords(acc: TestAccount): Promise<Entry[]> {
  const out: Entry[] = []
  for (const collection of COLLECTIONS) {
    const res = await acc.agent.com.atproto.repo.listRecords({ repo: acc.did, collection })
    for (const r of res.data.records)
      out.push({ collection, rkey: r.uri.split('/').pop()!, cid: r.cid })
  }
  return out.sort(order)
}

/** What this index stores as live for the repo. */
export async function storedRecords(db: Database, did: string): Promise<Entry[]> {
  const out: Entry[] = []
  for (const [table, collection] of [
    ['prompts', PROMPT],
    ['conversations', CONVERSATION],
    ['agents', AGENT],
  ]) {
    const rows = await db.rows<{ rkey: string; cid: string }>(
      sql`SELECT rkey, cid FROM ${sql.raw(table)} WHERE did = ${did} AND NOT deleted`,
    )
    for (const r of rows) out.push({ collection, rkey: r.rkey, cid: r.cid })
  }
  return out.sort(order)
}

export async function chainOf(db: Database, did: string) {
  const rows = await db.rows<{
    sync_state: string
    rev: string | null
    sync_reason: string | null
  }>(sql`SELECT sync_state, rev, sync_reason FROM repo_chain WHERE did = ${did}`)
  return rows[0] ?? null
}

/** Waits until the repo is synchronized at the PDS's latest rev with the PDS's records. */
export async function settled(db: Database, acc: TestAccount): Promise<void> {
  await waitFor(
    `${acc.handle} in sync with its PDS`,
    async () => {
      const latest = await acc.agent.com.atproto.sync.getLatestCommit({ did: acc.did })
      const chain = await chainOf(db, acc.did)
      if (chain?.sync_state !== 'synchronized' || chain.rev !== latest.data.rev) return false
      return (
        JSON.stringify(await storedRecords(db, acc.did)) === JSON.stringify(await pdsRecords(acc))
      )
    },
    30_000,
  )
}

/** An agent, a conversation and its prompt: the prompt is ok. Returns the slot's rkey. */
export async function writeSidecar(acc: TestAccount): Promise<{ rkey: string; agentUri: string }> {
  const api = acc.agent.com.atproto.repo
  const ag = await api.createRecord({
    repo: acc.did,
    collection: AGENT,
    record: agentRecord('template'),
  })
  const conv = await api.createRecord({
    repo: acc.did,
    collection: CONVERSATION,
    record: conversationRecord(ag.data.uri),
  })
  const rkey = conv.data.uri.split('/').pop()!
  await putSidecarPrompt(acc, { rkey, agentUri: ag.data.uri, content: 'memory' })
  return { rkey, agentUri: ag.data.uri }
}

/** Puts a prompt compiled from writeSidecar's agent template (no flag of its own) at `rkey`. */
export async function putSidecarPrompt(
  acc: TestAccount,
  o: { rkey: string; agentUri: string; content: string },
): Promise<void> {
  await acc.agent.com.atproto.repo.putRecord({
    repo: acc.did,
    collection: PROMPT,
    rkey: o.rkey,
    record: {
      ...promptRecord({ did: acc.did, rkey: o.rkey, agent: o.agentUri, content: o.content }),
      rawSystemHash: sha256('template'),
    },
  })
}

export async function writeNoise(acc: TestAccount): Promise<void> {
  await acc.agent.com.atproto.repo.createRecord({
    repo: acc.did,
    collection: 'app.bsky.feed.post',
    record: { $type: 'app.bsky.feed.post', text: 'noise', createdAt: new Date().toISOString() },
  })
}

export async function promptFlags(db: Database, did: string, rkey: string): Promise<number> {
  const rows = await db.rows<{ flags: number }>(
    sql`SELECT flags FROM prompts WHERE did = ${did} AND rkey = ${rkey} AND NOT deleted`,
  )
  return Number(rows[0]?.flags ?? -1)
}
