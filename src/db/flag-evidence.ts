import { FLAG_BITS } from '../model/flags.ts'
import { sql } from './orm.ts'

// The evidence behind a prompt's data-dependent flags, read in the same statement as a
// single prompt's lookup so the sentence and the flag come from one snapshot. Each probe
// mirrors its rule in recompute-flags.ts exactly, so the sentence names what set the flag;
// the group probes walk prompts_agent_group_idx from the prompt's compile time upwards.

export interface FlagEvidenceRow {
  raw_system_hash: string | null
  memfs_revision: string | null
  conversation_deleted: boolean | null
  agent_template_hash: string | null
  agent_hidden: boolean | null
  newer_template_rkey: string | null
  newer_template_hash: string | null
  newer_template_us: string | number | null
  newer_memory_rkey: string | null
  newer_memory_revision: string | null
  newer_memory_us: string | number | null
}

const { staleTemplate: STALE_TEMPLATE, staleMemory: STALE_MEMORY } = FLAG_BITS
const later = sql.raw(`q.did = p.did AND q.agent_uri = p.agent_uri
      AND q.compiled_us > p.compiled_us AND q.evidence AND NOT q.deleted`)

/** The evidence columns of prompt `p`, from the joins of evidenceJoins. */
export const evidenceColumns = sql`p.raw_system_hash, p.memfs_revision,
    ec.deleted AS conversation_deleted,
    ea.template_hash AS agent_template_hash, ea.hidden AS agent_hidden,
    nt.rkey AS newer_template_rkey, nt.raw_system_hash AS newer_template_hash,
    nt.compiled_us AS newer_template_us,
    nm.rkey AS newer_memory_rkey, nm.memfs_revision AS newer_memory_revision,
    nm.compiled_us AS newer_memory_us`

/**
 * The joins behind evidenceColumns: the conversation row (`ec`) and the agent's live row
 * (`ea`). Each group probe first tests its flag on `p`, a one-time filter in Postgres, so a
 * prompt without the flag costs no range scan.
 */
export const evidenceJoins = sql`
    LEFT JOIN conversations ec ON ec.did = p.did AND ec.rkey = p.rkey
    LEFT JOIN agents ea ON ea.did = p.agent_did AND ea.rkey = p.agent_rkey AND NOT ea.deleted
    LEFT JOIN LATERAL (
      SELECT q.rkey, q.raw_system_hash, q.compiled_us FROM prompts q
      WHERE (p.flags & ${sql.raw(String(STALE_TEMPLATE))}) <> 0
        AND ${later} AND q.raw_system_hash <> p.raw_system_hash
      ORDER BY q.compiled_us DESC LIMIT 1
    ) nt ON true
    LEFT JOIN LATERAL (
      SELECT q.rkey, q.memfs_revision, q.compiled_us FROM prompts q
      WHERE (p.flags & ${sql.raw(String(STALE_MEMORY))}) <> 0
        AND ${later} AND q.memfs_revision <> p.memfs_revision
      ORDER BY q.compiled_us DESC LIMIT 1
    ) nm ON true`
