import { eq } from 'drizzle-orm'
import type { Database } from './client.ts'
import { accounts } from './schema.ts'

/**
 * Whether this index keeps a repo (it has an accounts row): the rest of the network only
 * moves the cursor, and only kept repos are worth a handle check.
 */
export async function isKnownAccount(db: Database, did: string): Promise<boolean> {
  const rows = await db.orm
    .select({ did: accounts.did })
    .from(accounts)
    .where(eq(accounts.did, did))
    .limit(1)
  return rows.length > 0
}
