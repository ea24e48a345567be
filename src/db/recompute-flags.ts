import type { SQL } from 'drizzle-orm'
import { FLAG_BITS } from '../model/flags.ts'
import { type Executor, rows } from './client.ts'
import { sql } from './orm.ts'
import { didSet, json } from './recordset.ts'
import type { PromptRecord } from './schema.ts'

// Recomputes the data-dependent flags of every live prompt a batch may have affected (its
// slot was written, it shares a staleness group with a written prompt, or it names an agent
// record that was written or purged) in one statement.
//
// "A later compiledAt has a different value" is a window over the group excluding the row's
// own peers (equal instants are not later): none differs if the later min and max equal ours.

export interface AffectedPrompts {
  slots: Array<{ did: string; rkey: string }>
  groups: Array<{ did: string; agent_uri: string }>
  agents: Array<{ did: string; rkey: string }>
  /** Purged repos: prompts elsewhere naming their agents lose the direct template rule. */
  agentRepos: string[]
}

const { orphaned: ORPHANED, staleTemplate: STALE_TEMPLATE, staleMemory: STALE_MEMORY } = FLAG_BITS

/** The statement's inputs as CTE bodies; null when nothing can be affected. */
function affectedInputs(a: AffectedPrompts): { slots: SQL; targets: SQL; groups: SQL } | null {
  // Only written slots look their conversation up: any other prompt's conversation was not
  // written, so its stored orphaned bit holds (a group's size grows, the batch's does not).
  // A slot written as both prompt and conversation is looked up once.
  const slotKeys = [...new Map(a.slots.map((k) => [`${k.did}\u0000${k.rkey}`, k])).values()]
  const slots =
    slotKeys.length > 0
      ? sql`SELECT p.did, p.rkey, p.agent_uri, c.did IS NULL AS orphaned FROM prompts p
      JOIN jsonb_to_recordset(${json(slotKeys)}) AS s(did text, rkey text) ON p.did = s.did AND p.rkey = s.rkey
      LEFT JOIN conversations c ON c.did = p.did AND c.rkey = p.rkey AND NOT c.deleted
      WHERE NOT p.deleted`
      : sql`SELECT NULL::text AS did, NULL::text AS rkey, NULL::text AS agent_uri, false AS orphaned WHERE false`
  // Only the branches with input: an empty one still costs the planner 100 guessed rows,
  // enough to pick hash joins over whole-table scans for every other step of the statement.
  const branches: SQL[] = []
  if (slotKeys.length > 0) branches.push(sql`SELECT did, rkey, agent_uri FROM slots`)
  if (a.agents.length > 0)
    branches.push(sql`SELECT p.did, p.rkey, p.agent_uri FROM prompts p
      JOIN jsonb_to_recordset(${json(a.agents)}) AS g(did text, rkey text) ON p.agent_did = g.did AND p.agent_rkey = g.rkey WHERE NOT p.deleted`)
  if (a.agentRepos.length > 0)
    branches.push(sql`SELECT p.did, p.rkey, p.agent_uri FROM prompts p
      WHERE p.agent_did IN ${didSet(a.agentRepos)} AND NOT p.deleted`)
  const groups: SQL[] = []
  if (branches.length > 0)
    groups.push(sql`SELECT did, agent_uri FROM targets WHERE agent_uri IS NOT NULL`)
  if (a.groups.length > 0)
    groups.push(
      sql`SELECT did, agent_uri FROM jsonb_to_recordset(${json(a.groups)}) AS g(did text, agent_uri text)`,
    )
  if (groups.length === 0) return null
  const targets =
    branches.length > 0
      ? sql.join(branches, sql` UNION `)
      : sql`SELECT did, rkey, agent_uri FROM slots`
  return { slots, targets, groups: sql.join(groups, sql` UNION ALL `) }
}

/** Returns the keys of prompts whose flags changed. */
export async function recomputeFlags(
  ex: Executor,
  a: AffectedPrompts,
): Promise<Array<{ did: string; rkey: string }>> {
  const inputs = affectedInputs(a)
  if (!inputs) return []
  const { slots, targets, groups } = inputs
  // Raw: windows with EXCLUDE GROUP over jsonb_to_recordset targets, beyond the builder.
  return rows<Pick<PromptRecord, 'did' | 'rkey'>>(
    ex,
    sql`
    WITH slots AS (${slots}),
    targets AS (${targets}),
    -- Distinct: a group named by n targets meets the window once, not n times.
    tgroups AS (SELECT DISTINCT did, agent_uri FROM (${groups}) g),
    -- Every live prompt of an affected group with the window over its group, plus the
    -- targets in no group (nothing to infer from). Recomputing whole groups instead of
    -- joining the window back to the targets keeps this one pass per group: that join,
    -- misjudged as tiny, was planned as a nested loop re-running the window per target.
    -- Rows without compiledAt sort first and are never evidence, so they add nothing to
    -- anyone's window and get an empty one themselves.
    scope AS (
      SELECT p.did, p.rkey, p.flags, p.base_flags, p.raw_system_hash, p.memfs_revision,
        p.agent_did, p.agent_rkey,
        min(CASE WHEN p.evidence THEN p.raw_system_hash END) OVER w AS hash_min,
        max(CASE WHEN p.evidence THEN p.raw_system_hash END) OVER w AS hash_max,
        min(CASE WHEN p.evidence THEN p.memfs_revision END) OVER w AS memfs_min,
        max(CASE WHEN p.evidence THEN p.memfs_revision END) OVER w AS memfs_max
      FROM prompts p JOIN tgroups g ON p.did = g.did AND p.agent_uri = g.agent_uri
      WHERE NOT p.deleted
      WINDOW w AS (PARTITION BY p.did, p.agent_uri ORDER BY p.compiled_us DESC
                   RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW EXCLUDE GROUP)
      UNION ALL
      SELECT p.did, p.rkey, p.flags, p.base_flags, p.raw_system_hash, p.memfs_revision,
        p.agent_did, p.agent_rkey, NULL, NULL, NULL, NULL
      FROM targets t JOIN prompts p ON p.did = t.did AND p.rkey = t.rkey
      WHERE t.agent_uri IS NULL
    ),
    -- Materialized: only the rows whose flags change meet prompts again, by key.
    computed AS MATERIALIZED (
      SELECT * FROM (
        SELECT s.did, s.rkey, s.flags AS old_flags,
          s.base_flags
          | CASE WHEN sl.did IS NULL THEN s.flags & ${ORPHANED}
                 WHEN sl.orphaned THEN ${ORPHANED} ELSE 0 END
          | CASE WHEN s.raw_system_hash IS NULL THEN 0
                 WHEN a.template_hash IS NOT NULL THEN CASE WHEN a.template_hash <> s.raw_system_hash THEN ${STALE_TEMPLATE} ELSE 0 END
                 WHEN s.hash_min <> s.raw_system_hash OR s.hash_max <> s.raw_system_hash THEN ${STALE_TEMPLATE}
                 ELSE 0 END
          | CASE WHEN s.memfs_revision IS NOT NULL
                  AND (s.memfs_min <> s.memfs_revision OR s.memfs_max <> s.memfs_revision) THEN ${STALE_MEMORY}
                 ELSE 0 END AS flags
        FROM scope s
        LEFT JOIN slots sl ON sl.did = s.did AND sl.rkey = s.rkey
        LEFT JOIN agents a ON a.did = s.agent_did AND a.rkey = s.agent_rkey AND NOT a.deleted
      ) x WHERE x.flags <> x.old_flags
    )
    UPDATE prompts p SET flags = computed.flags FROM computed
    WHERE p.did = computed.did AND p.rkey = computed.rkey AND p.flags <> computed.flags
    RETURNING p.did, p.rkey`,
  )
}
