import type { SQL } from 'drizzle-orm'
import { FLAG_BITS } from '../../model/flags.ts'
import type { Database } from '../client.ts'
import { sql } from '../orm.ts'
import type { agents } from '../schema.ts'
import { conversations } from '../schema.ts'
import { columnsOf, type RawRow } from './columns.ts'
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

// A name is cut to 1,000 characters here already: pages show at most 100 of them, and a
// page of agents with record-sized names would otherwise read megabytes.
const AGENT_NAMES = sql`
  SELECT a.did, a.rkey, left(a.record->>'name', 1000) AS name
  FROM unnest(${sql.placeholder('dids')}::text[], ${sql.placeholder('rkeys')}::text[]) AS k(did, rkey)
  JOIN agents a ON a.did = k.did AND a.rkey = k.rkey
  WHERE NOT a.deleted AND NOT a.hidden AND jsonb_typeof(a.record->'name') = 'string'`

/**
 * The names visible agent records give themselves (`name`, when a string), by `did rkey`:
 * what the browse UI shows for an agent instead of its at-uri.
 */
export async function readAgentNames(
  db: Database,
  keys: ReadonlyArray<{ did: string; rkey: string }>,
): Promise<Map<string, string>> {
  if (keys.length === 0) return new Map()
  const rows = await db.read<{ did: string; rkey: string; name: string }>(AGENT_NAMES, {
    dids: keys.map((k) => k.did),
    rkeys: keys.map((k) => k.rkey),
  })
  return new Map(rows.map((r) => [`${r.did} ${r.rkey}`, r.name]))
}

// Cut as agent names are (AGENT_NAMES).
const CONVERSATION_TITLES = sql`
  SELECT c.did, c.rkey, left(c.record->>'title', 1000) AS title
  FROM unnest(${sql.placeholder('dids')}::text[], ${sql.placeholder('rkeys')}::text[]) AS k(did, rkey)
  JOIN conversations c ON c.did = k.did AND c.rkey = k.rkey
  WHERE NOT c.deleted AND NOT c.hidden AND jsonb_typeof(c.record->'title') = 'string'`

/** The titles visible conversation records give themselves (`title`, a string), by `did rkey`. */
export async function readConversationTitles(
  db: Database,
  keys: ReadonlyArray<{ did: string; rkey: string }>,
): Promise<Map<string, string>> {
  if (keys.length === 0) return new Map()
  const rows = await db.read<{ did: string; rkey: string; title: string }>(CONVERSATION_TITLES, {
    dids: keys.map((k) => k.did),
    rkeys: keys.map((k) => k.rkey),
  })
  return new Map(rows.map((r) => [`${r.did} ${r.rkey}`, r.title]))
}
