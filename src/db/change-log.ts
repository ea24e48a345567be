import type { SQL } from 'drizzle-orm'
import type { Role } from '../model/nsids.ts'
import { type Executor, rows } from './client.ts'
import { sql } from './orm.ts'
import { didSet, json } from './recordset.ts'
import { TABLE } from './writes.ts'

// Writes a change row for each touched record whose CID, flags or visibility differ from
// what the log last said, and records that as the emitted state, so a no-op replay writes
// nothing. The caller holds the writer lock, so seqs are assigned and committed in order.

export async function emitChanges(
  ex: Executor,
  role: Role,
  collection: string,
  keys: Array<{ did: string; rkey: string }>,
  wholeRepos: string[],
): Promise<number> {
  if (keys.length === 0 && wholeRepos.length === 0) return 0
  const isPrompt = role === 'prompt'
  const visible = sql`(NOT t.deleted AND NOT t.hidden)`
  const flagsChanged: SQL = isPrompt ? sql`OR t.flags IS DISTINCT FROM t.emitted_flags` : sql``
  const setFlags: SQL = isPrompt ? sql`, emitted_flags = t.flags` : sql``
  const flagsOut: SQL = isPrompt ? sql`t.flags` : sql`NULL::int`
  // A prompt upsert says what its version changed (SPEC 14).
  const changedOut: SQL = isPrompt ? sql`t.changed` : sql`NULL::text[]`
  // Only the branches with input: an empty one still costs the planner 100 guessed rows,
  // enough to turn the update below into a hash join over the whole table.
  const branches: SQL[] = []
  if (keys.length > 0)
    branches.push(sql`SELECT t.did, t.rkey FROM ${TABLE[role]} t
      JOIN jsonb_to_recordset(${json(keys)}) AS k(did text, rkey text) ON t.did = k.did AND t.rkey = k.rkey`)
  if (wholeRepos.length > 0)
    branches.push(sql`SELECT t.did, t.rkey FROM ${TABLE[role]} t
      WHERE t.did IN ${didSet(wholeRepos)}`)
  // Raw: one statement whose UPDATE ... RETURNING feeds the INSERT (data-modifying CTEs),
  // which the builder cannot chain; it returns only the count of change rows written.
  const [r] = await rows<{ n: number }>(
    ex,
    sql`
    WITH touched AS (${sql.join(branches, sql` UNION `)}),
    changed AS (
      UPDATE ${TABLE[role]} t SET emitted_cid = t.cid, emitted_visible = ${visible} ${setFlags}
      FROM touched WHERE t.did = touched.did AND t.rkey = touched.rkey
        AND (${visible} IS DISTINCT FROM t.emitted_visible
             OR (${visible} AND (t.cid IS DISTINCT FROM t.emitted_cid ${flagsChanged})))
      RETURNING t.did, t.rkey, t.cid, ${flagsOut} AS flags, ${changedOut} AS changed,
        ${visible} AS visible
    ),
    ins AS (
      INSERT INTO changes (did, collection, rkey, op, cid, flags, changed, at)
      SELECT did, ${collection}, rkey, CASE WHEN visible THEN 'upsert' ELSE 'delete' END,
             CASE WHEN visible THEN cid END, CASE WHEN visible THEN flags END,
             CASE WHEN visible THEN changed END, now()
      FROM changed ORDER BY did, rkey
      RETURNING 1
    )
    SELECT count(*)::int AS n FROM ins`,
  )
  return Number(r?.n ?? 0)
}
