import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startCli, waitFor } from '../helpers/cli.ts'
import { AGENT, CONVERSATION, PROMPT } from '../helpers/ingest-kit.ts'
import { agentRecord, conversationRecord, promptRecord } from '../helpers/letta-records.ts'
import { startNetwork, type TestAccount, type TestNetwork } from '../helpers/network.ts'
import { type PgCluster, startPgCluster } from '../helpers/pg-cluster.ts'

// `backfill` against the reference PDS while its database (a private cluster) is stopped
// with `pg_ctl stop -m immediate` and started again mid-run: the store calls wait the outage
// out, no repo is counted as failed, and every repo ends up indexed.

const REPOS = 12
let net: TestNetwork
let cluster: PgCluster
const accounts: TestAccount[] = []

beforeAll(async () => {
  net = await startNetwork()
  cluster = await startPgCluster()
  for (let i = 0; i < REPOS; i++) {
    const a = await net.createAccount(`bf${i}`)
    const api = a.agent.com.atproto.repo
    const ag = await api.createRecord({ repo: a.did, collection: AGENT, record: agentRecord('t') })
    const conv = await api.createRecord({
      repo: a.did,
      collection: CONVERSATION,
      record: conversationRecord(ag.data.uri),
    })
    const rkey = conv.data.uri.split('/').pop()!
    await api.putRecord({
      repo: a.did,
      collection: PROMPT,
      rkey,
      record: promptRecord({ did: a.did, rkey, agent: ag.data.uri, content: `memory ${i}` }),
    })
    accounts.push(a)
  }
}, 180_000)

afterAll(async () => {
  await cluster?.destroy()
  await net?.close()
})

async function count(sql: string): Promise<number> {
  const c = postgres(cluster.url, { max: 1, onnotice: () => {}, connect_timeout: 2 })
  try {
    const rows = await c.unsafe(sql)
    return Number(rows[0].n)
  } finally {
    await c.end()
  }
}

describe('backfill through a database outage', () => {
  it('waits the outage out and indexes every repo', async () => {
    const cli = startCli(['backfill', '--concurrency', '1'], {
      DATABASE_URL: cluster.url,
      RELAY_URL: net.pdsUrl,
      PLC_URL: net.plcUrl,
      ALLOW_PRIVATE_NETWORK: 'true',
    })
    // Stop the database once the first repo is in: the rest of the run meets the outage.
    await waitFor(
      'the first repo indexed',
      async () => (await count('SELECT count(*) AS n FROM backfill_repos').catch(() => 0)) > 0,
      120_000,
    )
    await cluster.stopImmediate()
    await new Promise((r) => setTimeout(r, 3000))
    expect(cli.child.exitCode).toBeNull()
    await cluster.start()
    expect(await cli.exited).toBe(0)
    expect(cli.output()).toMatch(/database unavailable, retrying/)
    expect(cli.output()).toMatch(
      new RegExp(`${REPOS} repos listed, \\d+ done, \\d+ already done, 0 failed`),
    )
    expect(await count('SELECT count(*) AS n FROM backfill_repos')).toBe(REPOS)
    expect(await count('SELECT count(*) AS n FROM prompts WHERE NOT deleted')).toBe(REPOS)
  }, 300_000)
})
