import { type SQL, sql } from 'drizzle-orm'
import type { ChainEvent, SyncState } from '../model/events.ts'
import type { Database, Executor } from './client.ts'

// Sync 1.1 chain state (schema.ts, repoChain): written by applyBatch in the transaction of
// the records it covers, read by the firehose's chain checks, the API and the gauge.

const json = (v: unknown): SQL => sql`${JSON.stringify(v)}::jsonb`

const KEEP = sql.raw('(excluded.rev IS NULL OR excluded.rev < repo_chain.rev)')

export interface ChainHead {
  did: string
  rev: string | null
  data: string | null
  state: SyncState
}

/**
 * The last chain state of each repo in a batch. A state-only event (a break) keeps the last
 * good rev and root; `sync_since` moves only when the state changes.
 */
export async function saveChains(ex: Executor, chains: ChainEvent[], now: Date): Promise<void> {
  if (chains.length === 0) return
  const rows = chains.map((c) => ({
    did: c.did,
    rev: c.rev,
    data: c.data,
    commit_cid: c.commit,
    sync_state: c.state,
    sync_reason: c.reason,
  }))
  const at = sql`${now.toISOString()}::timestamptz`
  await ex.execute(sql`
    INSERT INTO repo_chain (did, rev, data, commit_cid, sync_state, sync_reason, sync_since, updated_at)
    SELECT x.did, x.rev, x.data, x.commit_cid, x.sync_state, x.sync_reason, ${at}, ${at}
    FROM jsonb_to_recordset(${json(rows)}) AS x(did text, rev text, data text, commit_cid text,
      sync_state text, sync_reason text)
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
  const rows = await db.rows<{
    did: string
    rev: string | null
    data: string | null
    sync_state: SyncState
  }>(sql`SELECT did, rev, data, sync_state FROM repo_chain WHERE did = ${did}`)
  const r = rows[0]
  return r ? { did: r.did, rev: r.rev, data: r.data, state: r.sync_state } : null
}

/** Tracked repos (with records here, now or before), newest first, at most `limit`. */
export async function loadTrackedDids(db: Database, limit: number): Promise<string[]> {
  const rows = await db.rows<{ did: string }>(
    sql`SELECT did FROM accounts ORDER BY updated_at DESC LIMIT ${limit}`,
  )
  return rows.map((r) => r.did)
}

/** Repos left out of sync (by a break, or a resync a shutdown interrupted). */
export async function listUnsynchronized(db: Database, limit: number): Promise<string[]> {
  const rows = await db.rows<{ did: string }>(
    sql`SELECT did FROM repo_chain WHERE sync_state <> 'synchronized' ORDER BY sync_since LIMIT ${limit}`,
  )
  return rows.map((r) => r.did)
}

/**
 * Tracked repos by sync state, for `prompt_appview_repos{sync_state}`, and under
 * `oldestUnsyncedSeconds` how long the longest-waiting repo has been out of sync (0: none).
 */
export async function countReposBySyncState(db: Database): Promise<Record<string, number>> {
  const rows = await db.rows<{ state: string; n: number | string; oldest: number | string | null }>(
    sql`SELECT COALESCE(c.sync_state, 'unknown') AS state, count(*) AS n,
          EXTRACT(EPOCH FROM now() - min(c.sync_since)) AS oldest
        FROM accounts a LEFT JOIN repo_chain c ON c.did = a.did GROUP BY 1`,
  )
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
  const live = (table: string) =>
    sql`(SELECT count(*) FROM ${sql.raw(table)} t WHERE t.did = a.did AND NOT t.deleted AND NOT t.hidden)`
  const rows = await db.rows<Record<string, unknown>>(sql`
    SELECT a.did, a.handle, a.active, a.status, a.operator_hidden,
      c.sync_state, c.rev, c.sync_reason, c.sync_since,
      ${live('prompts')} AS prompts, ${live('conversations')} AS conversations, ${live('agents')} AS agents
    FROM accounts a LEFT JOIN repo_chain c ON c.did = a.did WHERE a.did = ${did}`)
  const r = rows[0]
  if (!r) return null
  const since = r.sync_since == null ? null : new Date(r.sync_since as string).toISOString()
  return {
    did: r.did as string,
    handle: r.handle as string | null,
    account: {
      active: r.active as boolean,
      status: r.status as string | null,
      hidden: !(r.active as boolean) || (r.operator_hidden as boolean),
    },
    sync: {
      state: r.sync_state as string | null,
      rev: r.rev as string | null,
      reason: r.sync_reason as string | null,
      since,
    },
    records: {
      prompts: Number(r.prompts),
      conversations: Number(r.conversations),
      agents: Number(r.agents),
    },
  }
}
