import type { SQL } from 'drizzle-orm'
import { type Database, rows as rowsOn } from '../client.ts'
import { sql } from '../orm.ts'
import { type RepoTextRow, repoTextChainsQuery } from '../revision-texts.ts'
import type { PromptRecord, promptRevisions } from '../schema.ts'

// The snapshot export (SPEC 13): keyset pages inside one repeatable-read transaction, so
// every page sees the same moment, the change log's newest seq as it first saw it. Seqs
// commit in order under the writers' lock, so loading the snapshot and then reading
// /v1/changes?since=<seq> misses nothing and repeats nothing.

/** A prompt as the export writes it: the record's fields pulled out as text, in SQL. */
export interface PromptExportRow {
  did: string
  rkey: string
  cid: string | null
  rev: string
  /** The record's `agent` when it is a string (another type stays in the record only). */
  agent: string | null
  agentName: string | null
  handle: string | null
  conversation: string | null
  /** The record's `compiledAt` as written (JSON text when it is not a string). */
  compiledAtRaw: string | null
  content: string | null
  coreMemory: string | null
  memfsRevision: string | null
  rawSystemHash: string | null
  /** What the current version changed (SPEC 14); null when indexed before it was kept. */
  changed: string[] | null
  flags: number
  recompiles: number
  indexedAt: string | Date
  contentBytes: number | null
  validationError: string | null
  provenance: string | null
  /** A visible conversation at the prompt's own slot. */
  conversationExists: boolean
  /** The at-uri in the record's `conversation` field names a visible conversation. */
  namedConversationExists: boolean
  agentExists: boolean
}

/** A visible prompt's flag bits, for the prompt_flags table. */
export type PromptFlagsRow = Pick<PromptRecord, 'did' | 'rkey' | 'flags'>

/** A conversation or agent: its record as JSON text. */
export type RecordExportRow = Pick<PromptRecord, 'did' | 'rkey' | 'cid' | 'rev'> & {
  record: string | null
  indexedAt: string | Date
}

/**
 * A revision of a visible prompt, with what its texts are rebuilt from, and the current
 * record's texts when this revision is the current one (older databases).
 */
export type RevisionExportRow = Omit<
  typeof promptRevisions.$inferSelect,
  'seenAt' | 'recordRest'
> & {
  seenAt: string | Date
  currentContent: string | null
  currentCoreMemory: string | null
}

export const EXPORT_TABLES = [
  'prompts',
  'prompt_flags',
  'conversations',
  'agents',
  'revisions',
] as const
export type ExportTable = (typeof EXPORT_TABLES)[number]

/** Where a keyset page starts: after this key (null: from the start). */
export interface ExportKey {
  did: string
  rkey: string
  rev?: string
}

/** What the export reads while its transaction is open. */
export interface SnapshotReader {
  /** The change log's newest seq in this snapshot (0 when it is empty). */
  readonly seq: number
  prompts(
    after: ExportKey | null,
    take: number,
    conversationNsid: string,
  ): Promise<PromptExportRow[]>
  promptFlags(after: ExportKey | null, take: number): Promise<PromptFlagsRow[]>
  records(
    table: 'conversations' | 'agents',
    after: ExportKey | null,
    take: number,
  ): Promise<RecordExportRow[]>
  revisions(after: ExportKey | null, take: number): Promise<RevisionExportRow[]>
  /** The rows of each named (did, hash) text and of every text its deltas rest on. */
  textChains(keys: ReadonlyArray<{ did: string; hash: string }>): Promise<RepoTextRow[]>
}

const after2 = (alias: string, k: ExportKey | null): SQL =>
  k === null
    ? sql`true`
    : sql`(${sql.raw(alias)}.did, ${sql.raw(alias)}.rkey) > (${k.did}, ${k.rkey})`

// The record is detoasted once, by jsonb_to_record, not once per `->>` field. `agent` and
// `conversation` come as jsonb so a non-string value exports as null.
const promptPage = (after: ExportKey | null, take: number, conversationNsid: string): SQL => sql`
  SELECT p.did, p.rkey, p.cid, p.rev,
    CASE WHEN jsonb_typeof(r.agent) = 'string' THEN r.agent #>> '{}' END AS agent,
    CASE WHEN jsonb_typeof(a.record->'name') = 'string' THEN a.record->>'name' END AS "agentName",
    acc.handle,
    CASE WHEN jsonb_typeof(r.conversation) = 'string' THEN r.conversation #>> '{}' END AS conversation,
    r."compiledAt" AS "compiledAtRaw", r.content,
    r."coreMemory", r."memfsRevision", r."rawSystemHash", p.changed,
    p.flags, p.recompiles, p.indexed_at AS "indexedAt", p.content_bytes AS "contentBytes",
    p.validation_error AS "validationError", p.source AS provenance,
    EXISTS (SELECT 1 FROM conversations c WHERE c.did = p.did AND c.rkey = p.rkey AND NOT c.deleted AND NOT c.hidden) AS "conversationExists",
    (jsonb_typeof(r.conversation) = 'string' AND EXISTS (SELECT 1 FROM conversations c
      WHERE c.did = split_part(r.conversation #>> '{}', '/', 3)
        AND c.rkey = split_part(r.conversation #>> '{}', '/', 5)
        AND r.conversation #>> '{}' = 'at://' || c.did || '/' || ${conversationNsid} || '/' || c.rkey
        AND NOT c.deleted AND NOT c.hidden)) IS TRUE AS "namedConversationExists",
    a.did IS NOT NULL AS "agentExists"
  FROM prompts p
  LEFT JOIN LATERAL jsonb_to_record(CASE WHEN jsonb_typeof(p.record) = 'object' THEN p.record END)
    AS r(agent jsonb, conversation jsonb, "compiledAt" text, content text, "coreMemory" text,
      "memfsRevision" text, "rawSystemHash" text) ON true
  LEFT JOIN agents a ON a.did = p.agent_did AND a.rkey = p.agent_rkey AND NOT a.deleted AND NOT a.hidden
  LEFT JOIN accounts acc ON acc.did = p.did
  WHERE NOT p.deleted AND NOT p.hidden AND ${after2('p', after)}
  ORDER BY p.did, p.rkey LIMIT ${take}`

const promptFlagsPage = (after: ExportKey | null, take: number): SQL => sql`
  SELECT p.did, p.rkey, p.flags FROM prompts p
  WHERE NOT p.deleted AND NOT p.hidden AND ${after2('p', after)}
  ORDER BY p.did, p.rkey LIMIT ${take}`

const recordPage = (
  table: 'conversations' | 'agents',
  after: ExportKey | null,
  take: number,
) => sql`
  SELECT t.did, t.rkey, t.cid, t.rev, t.record::text AS record, t.indexed_at AS "indexedAt"
  FROM ${sql.identifier(table)} t
  WHERE NOT t.deleted AND NOT t.hidden AND ${after2('t', after)}
  ORDER BY t.did, t.rkey LIMIT ${take}`

// Revisions of visible prompts only: a deleted or hidden prompt's history is not shown.
const revisionPage = (after: ExportKey | null, take: number): SQL => {
  const bound =
    after === null
      ? sql`true`
      : sql`(r.did, r.rkey, r.rev) > (${after.did}, ${after.rkey}, ${after.rev ?? ''})`
  return sql`
  SELECT r.did, r.rkey, r.rev, r.cid, r.compiled_at AS "compiledAt",
    r.memfs_revision AS "memfsRevision", r.raw_system_hash AS "rawSystemHash",
    r.seen_at AS "seenAt", r.changed, r.memory_files AS "memoryFiles", r.text_kept AS "textKept", r.content_hash AS "contentHash",
    r.core_memory_hash AS "coreMemoryHash", r.core_memory_at AS "coreMemoryAt",
    r.core_memory_length AS "coreMemoryLength",
    CASE WHEN NOT r.text_kept AND r.cid = p.cid THEN p.record->>'content' END AS "currentContent",
    CASE WHEN NOT r.text_kept AND r.cid = p.cid THEN p.record->>'coreMemory' END AS "currentCoreMemory"
  FROM prompt_revisions r
  JOIN prompts p ON p.did = r.did AND p.rkey = r.rkey AND NOT p.deleted AND NOT p.hidden
  WHERE ${bound}
  ORDER BY r.did, r.rkey, r.rev LIMIT ${take}`
}

/**
 * Runs `work` in one read-only, repeatable-read transaction and hands it the reader of that
 * snapshot. On PGlite (one connection) writers wait until it ends; on Postgres they go on.
 */
export async function readSnapshot<T>(
  db: Database,
  work: (reader: SnapshotReader) => Promise<T>,
): Promise<T> {
  return db.orm.transaction(
    async (tx) => {
      const rows = <R>(q: SQL) => rowsOn<R>(tx, q)
      // The first statement fixes the snapshot, so the seq and every page agree.
      const [head] = await rows<{ seq: number | string | null }>(
        sql`SELECT max(seq) AS seq FROM changes`,
      )
      return work({
        seq: Number(head?.seq ?? 0),
        prompts: (after, take, nsid) => rows(promptPage(after, take, nsid)),
        promptFlags: (after, take) => rows(promptFlagsPage(after, take)),
        records: (table, after, take) => rows(recordPage(table, after, take)),
        revisions: (after, take) => rows(revisionPage(after, take)),
        textChains: (keys) =>
          keys.length === 0 ? Promise.resolve([]) : rows(repoTextChainsQuery(keys)),
      })
    },
    { isolationLevel: 'repeatable read', accessMode: 'read only' },
  )
}
