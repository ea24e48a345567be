import type { SQL } from 'drizzle-orm'
import type { Database } from '../client.ts'
import { and, eq, inArray, isNotNull, not, sql } from '../orm.ts'
import { readAgainIfConnectionLost } from '../retry.ts'
import { accounts } from '../schema.ts'

// Handles: the actor a request names, and the names the browse UI shows.

/** A handle the index knows; when two DIDs claimed it, the latest identity event wins. */
export function handleQuery(handle: string): SQL {
  // Raw: a prepared lookup on the hot path (db.read takes fixed-text SQL).
  return sql`SELECT a.did FROM accounts a WHERE a.handle = ${handle}
    ORDER BY a.identity_us DESC NULLS LAST LIMIT 1`
}

export async function readDidOfHandle(db: Database, handle: string): Promise<string | null> {
  const rows = await db.read<Pick<typeof accounts.$inferSelect, 'did'>>(handleQuery(handle))
  return rows[0]?.did ?? null
}

/**
 * The handles of some repos, for the browse UI: only verified handles (identity events store
 * an unverifiable one as absent) of accounts that are visible, so a takedown hides the name too.
 */
export async function readHandles(db: Database, dids: string[]): Promise<Map<string, string>> {
  // The IN list has one parameter per DID: a text per count, so not a prepared statement.
  const rows = await readAgainIfConnectionLost(() =>
    db.orm
      .select({ did: accounts.did, handle: accounts.handle })
      .from(accounts)
      .where(
        and(
          inArray(accounts.did, dids),
          isNotNull(accounts.handle),
          eq(accounts.active, true),
          not(accounts.operatorHidden),
        ),
      ),
  )
  return new Map(rows.map((r) => [r.did, r.handle ?? '']))
}

/**
 * Whether this index keeps a repo (it has an accounts row): the rest of the network only
 * moves the cursor, and only kept repos are worth a handle check.
 */
export async function isKnownAccount(db: Database, did: string): Promise<boolean> {
  return (await db.orm.$count(accounts, eq(accounts.did, did))) > 0
}
