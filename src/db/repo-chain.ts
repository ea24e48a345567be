import type { ChainEvent, SyncState } from '../model/events.ts'
import type { Database, Executor } from './client.ts'
import { and, asc, count, desc, eq, ne, not, sql } from './orm.ts'
import { recordset } from './recordset.ts'
import { accounts, agents, conversations, prompts, repoChain } from './schema.ts'

// Sync 1.1 chain state (schema.ts, repoChain): written by applyBatch in the transaction of
// the records it covers, read by the firehose's chain checks, the API and the gauge.

const KEEP = sql.raw('(excluded.rev IS NULL OR excluded.rev < repo_chain.rev)')

export type ChainHead = Pick<ChainEvent, 'did' | 'rev' | 'data' | 'state'>

/**
 * The last chain state of each repo in a batch. A state-only event (a break) keeps the last
 * good rev and root; `sync_since` moves only when the state changes.
 */
const CHAIN_ROWS = recordset(repoChain, [
  'did',
  'rev',
  'data',
  'commitCid',
  'syncState',
  'syncReason',
  'syncSince',
  'updatedAt',
])

export async function saveChains(ex: Executor, chains: ChainEvent[], now: Date): Promise<void> {
  if (chains.length === 0) return
  const rows = chains.map((c) => ({
    did: c.did,
    rev: c.rev,
    data: c.data,
    commitCid: c.commit,
    syncState: c.state,
    syncReason: c.reason,
    syncSince: now,
    updatedAt: now,
  }))
  // Raw: the builder inserts VALUES, not the rows of a jsonb_to_recordset.
  await ex.execute(sql`
    INSERT INTO repo_chain (${CHAIN_ROWS.names}) SELECT ${CHAIN_ROWS.values} FROM ${CHAIN_ROWS.from(rows)}
    ON CONFLICT (did) DO UPDATE SET
      -- Never backwards: a backfill that finished after newer commits keeps their head.
      rev = CASE WHEN ${KEEP} THEN repo_chain.rev ELSE excluded.rev END,
      data = CASE WHEN ${KEEP} THEN repo_chain.data ELSE excluded.data END,
      commit_cid = CASE WHEN ${KEEP} THEN repo_chain.commit_cid ELSE excluded.commit_cid END,
      sync_since = CASE WHEN repo_chain.sync_state = excluded.sync_state
        THEN repo_chain.sync_since ELSE excluded.sync_since END,
      sync_state = excluded.sync_state, sync_reason = excluded.sync_reason,
      updated_at = excluded.updated_at`)
}

export async function loadChainHead(db: Database, did: string): Promise<ChainHead | null> {
  const [r] = await db.orm
    .select({
      did: repoChain.did,
      rev: repoChain.rev,
      data: repoChain.data,
      state: repoChain.syncState,
    })
    .from(repoChain)
    .where(eq(repoChain.did, did))
  return r ? { ...r, state: r.state as SyncState } : null
}

/** Tracked repos (with records here, now or before), newest first, at most `limit`. */
export async function loadTrackedDids(db: Database, limit: number): Promise<string[]> {
  const rows = await db.orm
    .select({ did: accounts.did })
    .from(accounts)
    .orderBy(desc(accounts.updatedAt))
    .limit(limit)
  return rows.map((r) => r.did)
}

/** Repos left out of sync (by a break, or a resync a shutdown interrupted). */
export async function listUnsynchronized(db: Database, limit: number): Promise<string[]> {
  const rows = await db.orm
    .select({ did: repoChain.did })
    .from(repoChain)
    .where(ne(repoChain.syncState, 'synchronized'))
    .orderBy(asc(repoChain.syncSince))
    .limit(limit)
  return rows.map((r) => r.did)
}

/**
 * Tracked repos by sync state, for `prompt_appview_repos{sync_state}`, and under
 * `oldestUnsyncedSeconds` how long the longest-waiting repo has been out of sync (0: none).
 */
export async function countReposBySyncState(db: Database): Promise<Record<string, number>> {
  const state = sql<string>`COALESCE(${repoChain.syncState}, 'unknown')`
  const rows = await db.orm
    .select({
      state,
      n: count(),
      oldest: sql<string | null>`EXTRACT(EPOCH FROM now() - min(${repoChain.syncSince}))`,
    })
    .from(accounts)
    .leftJoin(repoChain, eq(repoChain.did, accounts.did))
    .groupBy(state)
  const out: Record<string, number> = { oldestUnsyncedSeconds: 0 }
  for (const r of rows) {
    out[r.state] = Number(r.n)
    if (r.state !== 'synchronized' && r.state !== 'unknown' && r.oldest != null)
      out.oldestUnsyncedSeconds = Math.max(out.oldestUnsyncedSeconds, Number(r.oldest))
  }
  return out
}

export interface RepoView {
  did: string
  handle: string | null
  account: { active: boolean; status: string | null; hidden: boolean }
  sync: { state: string | null; rev: string | null; reason: string | null; since: string | null }
  records: { prompts: number; conversations: number; agents: number }
}

/** GET /v1/repos/{did}: null when the repo is not tracked here. Counts are of visible records. */
export async function getRepoView(db: Database, did: string): Promise<RepoView | null> {
  const live = (t: typeof prompts | typeof conversations | typeof agents) =>
    db.orm.$count(t, and(eq(t.did, accounts.did), not(t.deleted), not(t.hidden)))
  const [r] = await db.orm
    .select({
      did: accounts.did,
      handle: accounts.handle,
      active: accounts.active,
      status: accounts.status,
      operatorHidden: accounts.operatorHidden,
      chain: { state: repoChain.syncState, rev: repoChain.rev, reason: repoChain.syncReason },
      since: repoChain.syncSince,
      prompts: live(prompts),
      conversations: live(conversations),
      agents: live(agents),
    })
    .from(accounts)
    .leftJoin(repoChain, eq(repoChain.did, accounts.did))
    .where(eq(accounts.did, did))
  if (!r) return null
  return {
    did: r.did,
    handle: r.handle,
    account: { active: r.active, status: r.status, hidden: !r.active || r.operatorHidden },
    sync: {
      state: r.chain?.state ?? null,
      rev: r.chain?.rev ?? null,
      reason: r.chain?.reason ?? null,
      since: r.since == null ? null : r.since.toISOString(),
    },
    records: {
      prompts: Number(r.prompts),
      conversations: Number(r.conversations),
      agents: Number(r.agents),
    },
  }
}
