import { type Database, rows } from '../client.ts'
import { sql } from '../orm.ts'
import { readAgainIfConnectionLost } from '../retry.ts'

// The overview's sync card: repos by Sync 1.1 state and the ones waiting longest, of
// visible accounts only (active and not hidden by the operator), as /v1/repos serves them;
// a hidden repo is never counted where a person looks.

const VISIBLE_ACCOUNT = sql.raw('a.active AND NOT a.operator_hidden')

export interface SyncStates {
  /** Visible repos by state; `unknown` for a repo no chain check has read yet. */
  counts: Record<string, number>
  /** Up to `limit` visible repos not synchronized, longest waiting first. */
  dids: string[]
}

export async function readVisibleSyncStates(db: Database, limit: number): Promise<SyncStates> {
  const [counted, waiting] = await readAgainIfConnectionLost(() =>
    Promise.all([
      rows<{ state: string; n: string | number }>(
        db.orm,
        sql`
        SELECT COALESCE(r.sync_state, 'unknown') AS state, count(*) AS n
        FROM accounts a LEFT JOIN repo_chain r ON r.did = a.did
        WHERE ${VISIBLE_ACCOUNT} GROUP BY 1`,
      ),
      // repo_chain_state_idx (sync_state, sync_since) serves the non-synchronized states.
      rows<{ did: string }>(
        db.orm,
        sql`
        SELECT r.did FROM repo_chain r JOIN accounts a ON a.did = r.did
        WHERE r.sync_state <> 'synchronized' AND ${VISIBLE_ACCOUNT}
        ORDER BY r.sync_since ASC LIMIT ${limit}`,
      ),
    ]),
  )
  const counts: Record<string, number> = {}
  for (const r of counted) counts[r.state] = Number(r.n)
  return { counts, dids: waiting.map((r) => r.did) }
}
