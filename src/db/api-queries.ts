import { type SQL, sql } from 'drizzle-orm'
import { FLAG_BITS, FLAG_NAMES, type FlagName } from '../model/flags.ts'
import type { Nsids } from '../model/nsids.ts'
import { promptSelect } from './queries.ts'

// The SQL of every read the API issues, as builders: the routes run them, and a test runs
// EXPLAIN on exactly the same statements to prove each one is served by an index.
//
// Flag predicates are spelled exactly like the partial indexes' (`(flags & 1) <> 0`,
// `flags = 0`, literal bits, no parameters) so the planner can prove they apply, and
// pages sort `rkey DESC NULLS LAST, did`, the indexes' own order.

export type ListFlag = FlagName | 'ok'

export interface PromptListQuery {
  flag: ListFlag | null
  did: string | null
  agent: { did: string; rkey: string } | null
  /** Continue after this (rkey, did). */
  after: { rkey: string; did: string } | null
  /** Rows to fetch: the page size plus one, to know whether another page follows. */
  take: number
}

const VISIBLE = sql.raw('NOT p.deleted AND NOT p.hidden')

/** The predicate of a flag's partial index, for table alias `p`. */
export function flagPredicate(flag: ListFlag): SQL {
  if (flag === 'ok') return sql.raw('p.flags = 0')
  return sql.raw(`(p.flags & ${FLAG_BITS[flag]}) <> 0`)
}

export function promptByKeyQuery(nsids: Nsids, did: string, rkey: string): SQL {
  return sql`SELECT ${promptSelect(nsids)} FROM prompts p
    WHERE p.did = ${did} AND p.rkey = ${rkey} AND ${VISIBLE}`
}

export function promptListQuery(nsids: Nsids, q: PromptListQuery): SQL {
  const where: SQL[] = [VISIBLE]
  if (q.flag) where.push(flagPredicate(q.flag))
  if (q.did) where.push(sql`p.did = ${q.did}`)
  if (q.agent) where.push(sql`p.agent_did = ${q.agent.did} AND p.agent_rkey = ${q.agent.rkey}`)
  if (q.after) {
    // Mixed directions rule out a row comparison; the leading `rkey <=` is the index bound.
    const { rkey, did } = q.after
    where.push(sql`p.rkey <= ${rkey} AND (p.rkey < ${rkey} OR p.did > ${did})`)
  }
  // The page is cut first and the existence checks run on its rows only: left in the
  // outer query, the planner costs them for every row the scan might visit and hashes
  // the whole conversations and agents tables instead.
  return sql`SELECT ${promptSelect(nsids, false)} FROM (
      SELECT * FROM prompts p
      WHERE ${sql.join(where, sql` AND `)}
      ORDER BY p.rkey DESC NULLS LAST, p.did ASC
      LIMIT ${q.take}
    ) p
    ORDER BY p.rkey DESC NULLS LAST, p.did ASC`
}

/** Whether a prompt slot has a row, and whether its repo is hidden (deleted rows keep history). */
export function promptStateQuery(did: string, rkey: string): SQL {
  return sql`SELECT p.deleted, p.hidden FROM prompts p WHERE p.did = ${did} AND p.rkey = ${rkey}`
}

export function revisionsQuery(
  did: string,
  rkey: string,
  beforeRev: string | null,
  take: number,
): SQL {
  const before = beforeRev === null ? sql`` : sql`AND r.rev < ${beforeRev}`
  return sql`SELECT r.rev, r.cid, r.compiled_at, r.raw_system_hash, r.memfs_revision, r.content_hash, r.seen_at
    FROM prompt_revisions r WHERE r.did = ${did} AND r.rkey = ${rkey} ${before}
    ORDER BY r.rev DESC LIMIT ${take}`
}

export function conversationQuery(did: string, rkey: string): SQL {
  return sql`SELECT c.did, c.rkey, c.cid, c.record, p.flags AS prompt_flags
    FROM conversations c
    LEFT JOIN prompts p ON p.did = c.did AND p.rkey = c.rkey AND ${VISIBLE}
    WHERE c.did = ${did} AND c.rkey = ${rkey} AND NOT c.deleted AND NOT c.hidden`
}

export function agentRecordQuery(did: string, rkey: string): SQL {
  return sql`SELECT a.record FROM agents a
    WHERE a.did = ${did} AND a.rkey = ${rkey} AND NOT a.deleted AND NOT a.hidden`
}

/**
 * Visible prompts naming one agent record, by flag. `agent_did`/`agent_rkey` are set
 * exactly when the prompt's `agent` at-uri names a record of the agent collection.
 */
export function agentPromptCountsQuery(did: string, rkey: string): SQL {
  const cols = FLAG_NAMES.map(
    (f) =>
      sql`count(*) FILTER (WHERE (p.flags & ${sql.raw(String(FLAG_BITS[f]))}) <> 0)::int AS ${sql.identifier(f)}`,
  )
  return sql`SELECT count(*)::int AS total, count(*) FILTER (WHERE p.flags = 0)::int AS ok,
      ${sql.join(cols, sql`, `)}
    FROM prompts p WHERE p.agent_did = ${did} AND p.agent_rkey = ${rkey} AND ${VISIBLE}`
}

/**
 * Up to `take` change rows after `since`, oldest first, each marked `withheld` when its
 * repo is hidden now and it is not a delete: a reader starting late must not learn what a
 * takedown withdrew, yet every reader sees the delete that withdrew it. Withheld rows are
 * returned (and skipped by the caller) so the keyset still advances past them.
 *
 * The chunk is cut before the account check, and the check is a LATERAL probe with LIMIT
 * (which the planner cannot flatten into a join): one primary-key lookup per row, never a
 * hash of the whole accounts table costed for every row the seq index might visit.
 */
export function changesQuery(since: number, take: number): SQL {
  return sql`SELECT c.seq, c.did, c.collection, c.rkey, c.op, c.cid, c.flags, c.at,
      (c.op <> 'delete' AND COALESCE(acc.hidden, false)) AS withheld
    FROM (
      SELECT seq, did, collection, rkey, op, cid, flags, at FROM changes
      WHERE seq > ${since} ORDER BY seq ASC LIMIT ${take}
    ) c
    LEFT JOIN LATERAL (
      SELECT (NOT a.active OR a.operator_hidden) AS hidden FROM accounts a WHERE a.did = c.did LIMIT 1
    ) acc ON true
    ORDER BY c.seq ASC`
}

/** A handle the index knows; when two DIDs claimed it, the latest identity event wins. */
export function handleQuery(handle: string): SQL {
  return sql`SELECT a.did FROM accounts a WHERE a.handle = ${handle}
    ORDER BY a.identity_us DESC NULLS LAST LIMIT 1`
}

/**
 * The handles of some repos, for the browse UI: only verified handles (identity events store
 * an unverifiable one as absent) of accounts that are visible, so a takedown hides the name too.
 */
export function handlesQuery(dids: string[]): SQL {
  return sql`SELECT a.did, a.handle FROM accounts a
    WHERE a.did IN (${sql.join(
      dids.map((d) => sql`${d}`),
      sql`, `,
    )}) AND a.handle IS NOT NULL AND a.active AND NOT a.operator_hidden`
}

/**
 * The newest change rows, newest first, for the UI's overview: the primary key read
 * backwards, with the same `withheld` probe as changesQuery so a hidden repo's rows are
 * skipped by the caller.
 */
export function recentChangesQuery(take: number): SQL {
  return sql`SELECT c.seq, c.did, c.collection, c.rkey, c.op, c.cid, c.flags, c.at,
      (c.op <> 'delete' AND COALESCE(acc.hidden, false)) AS withheld
    FROM (SELECT seq, did, collection, rkey, op, cid, flags, at FROM changes ORDER BY seq DESC LIMIT ${take}) c
    LEFT JOIN LATERAL (
      SELECT (NOT a.active OR a.operator_hidden) AS hidden FROM accounts a WHERE a.did = c.did LIMIT 1
    ) acc ON true
    ORDER BY c.seq DESC`
}
