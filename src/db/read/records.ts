import type { SQL } from 'drizzle-orm'
import { FLAG_BITS } from '../../model/flags.ts'
import type { Database } from '../client.ts'
import { sql } from '../orm.ts'
import { type agents, conversations } from '../schema.ts'
import { columnsOf, keyArrays, type RawRow } from './columns.ts'
import { type FlagCounts, flagCountColumns, flagCountsOf, VISIBLE } from './prompts.ts'

// Conversations and agents: the records prompts are checked against. Raw `sql`: prepared
// lookups (db.read takes fixed-text SQL), and the agent's counts use the flag bits as literals.

const CONVERSATION_KEYS = ['did', 'rkey', 'cid', 'record'] as const

export type ConversationRow = RawRow<
  Pick<typeof conversations.$inferSelect, (typeof CONVERSATION_KEYS)[number]>
> & { promptFlags: number | null }

export function conversationQuery(did: string, rkey: string): SQL {
  return sql`SELECT ${columnsOf(conversations, 'c', CONVERSATION_KEYS)}, p.flags AS "promptFlags"
    FROM conversations c
    LEFT JOIN prompts p ON p.did = c.did AND p.rkey = c.rkey AND ${VISIBLE}
    WHERE c.did = ${did} AND c.rkey = ${rkey} AND NOT c.deleted AND NOT c.hidden`
}

export async function readConversation(db: Database, did: string, rkey: string) {
  const rows = await db.read<ConversationRow>(conversationQuery(did, rkey))
  return rows[0] ?? null
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
  return sql`SELECT ${flagCountColumns()}
    FROM prompts p WHERE p.agent_did = ${did} AND p.agent_rkey = ${rkey} AND ${VISIBLE}`
}

export interface AgentRead {
  /** The visible agent row, or null when it is not indexed. */
  record: Pick<typeof agents.$inferSelect, 'record'> | null
  prompts: { total: number; flags: FlagCounts }
}

export async function readAgent(db: Database, did: string, rkey: string): Promise<AgentRead> {
  const [records, counts] = await Promise.all([
    db.read<Pick<typeof agents.$inferSelect, 'record'>>(agentRecordQuery(did, rkey)),
    db.read<Record<string, number>>(agentPromptCountsQuery(did, rkey)),
  ])
  return { record: records[0] ?? null, prompts: flagCountsOf(counts[0]) }
}

// A prompt is current with its agent when it carries neither stale flag (model/flags.ts).
const STALE = sql.raw(String(FLAG_BITS.staleTemplate | FLAG_BITS.staleMemory))

/**
 * One agent's stored template hash (null when its record is not visible or its `system`
 * is not a string) and its visible prompts in its own repo: how many are current, and
 * the counts by flag.
 */
export function agentCurrencyQuery(did: string, rkey: string): SQL {
  return sql`SELECT
    (SELECT a.template_hash FROM agents a
      WHERE a.did = ${did} AND a.rkey = ${rkey} AND NOT a.deleted AND NOT a.hidden) AS "templateHash",
    count(*) FILTER (WHERE (p.flags & ${STALE}) = 0)::int AS current, ${flagCountColumns()}
    FROM prompts p
    WHERE p.did = ${did} AND p.agent_did = ${did} AND p.agent_rkey = ${rkey} AND ${VISIBLE}`
}

export interface AgentCurrency {
  templateHash: string | null
  current: number
  total: number
  flags: FlagCounts
}

export async function readAgentCurrency(
  db: Database,
  did: string,
  rkey: string,
): Promise<AgentCurrency> {
  const [row] = await db.read<Record<string, unknown>>(agentCurrencyQuery(did, rkey))
  const { templateHash, current, ...counts } = row ?? {}
  return {
    templateHash: typeof templateHash === 'string' ? templateHash : null,
    current: Number(current ?? 0),
    ...flagCountsOf(counts as Record<string, number>),
  }
}

/**
 * The label visible records of `table` give themselves (`field`, when a string), by
 * `did rkey`: what the browse UI shows instead of an at-uri. Cut to 1,000 characters, since
 * pages show at most 100 and a page of record-sized labels would otherwise read megabytes.
 */
function labelRead(table: 'agents' | 'conversations', field: 'name' | 'title') {
  const query = sql`
  SELECT t.did, t.rkey, left(t.record->>${sql.raw(`'${field}'`)}, 1000) AS label
  FROM unnest(${sql.placeholder('dids')}::text[], ${sql.placeholder('rkeys')}::text[]) AS k(did, rkey)
  JOIN ${sql.raw(table)} t ON t.did = k.did AND t.rkey = k.rkey
  WHERE NOT t.deleted AND NOT t.hidden AND jsonb_typeof(t.record->${sql.raw(`'${field}'`)}) = 'string'`
  return async (
    db: Database,
    keys: ReadonlyArray<{ did: string; rkey: string }>,
  ): Promise<Map<string, string>> => {
    if (keys.length === 0) return new Map()
    const rows = await db.read<{ did: string; rkey: string; label: string }>(query, keyArrays(keys))
    return new Map(rows.map((r) => [`${r.did} ${r.rkey}`, r.label]))
  }
}

export const readAgentNames = labelRead('agents', 'name')
export const readConversationTitles = labelRead('conversations', 'title')
