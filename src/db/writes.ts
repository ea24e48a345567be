import type { SQL } from 'drizzle-orm'
import type { SourceCursor } from '../model/cursor.ts'
import type { CursorPosition } from '../model/events.ts'
import type { Role } from '../model/nsids.ts'
import type { PromptVersion, RecompileKind } from '../model/recompile-anatomy.ts'
import {
  type AccountRow,
  type CurrentVersion,
  keyOf,
  type RecordRow,
  type StoredRecord,
} from '../model/rows.ts'
import { type Database, type Executor, rows } from './client.ts'
import { and, eq, getTableColumns, not, sql } from './orm.ts'
import {
  chunked,
  didSet,
  excludedSet,
  inDids,
  JsonText,
  recordset,
  TEXT_ROWS_PER_STATEMENT,
  textValues,
} from './recordset.ts'
import {
  accounts,
  agents,
  conversations,
  ingestCursors,
  type PromptRecord,
  promptRevisions,
  prompts,
  revisionTexts,
} from './schema.ts'

// Set-based statements of the indexer (see recordset.ts for why rows travel as JSON).

export const TABLE = { prompt: prompts, conversation: conversations, agent: agents } as const
const EVIDENCE_HORIZON_US = 5 * 60 * 1_000_000

/**
 * Search words as a tsvector literal, which Postgres reads without its text parser. Quoted
 * but unescaped, safe because a search word is letters and digits only (model/search-words.ts).
 */
export function tsvectorLiteral(words: string[]): string {
  return words.length === 0 ? '' : `'${words.join("' '")}'`
}

const KEY_ROWS = {
  prompt: recordset(prompts, ['did', 'rkey']),
  conversation: recordset(conversations, ['did', 'rkey']),
  agent: recordset(agents, ['did', 'rkey']),
}

type LoadedRecord = Pick<
  PromptRecord,
  'did' | 'rkey' | 'rev' | 'cid' | 'deleted' | 'recompiles' | 'agentUri'
>

export async function loadRecords(
  ex: Executor,
  role: Role,
  keys: Array<{ did: string; rkey: string }>,
  wholeRepos: string[],
): Promise<Map<string, StoredRecord>> {
  const extra =
    role === 'prompt'
      ? sql`t.recompiles, t.agent_uri AS "agentUri"`
      : sql`0 AS recompiles, NULL AS "agentUri"`
  const cols = sql`t.did, t.rkey, t.rev, t.cid, t.deleted, ${extra}`
  // Raw: the builder cannot join a jsonb_to_recordset with its column definition list.
  // One index-driven branch per kind of input, none for an empty one: an OR, or an empty
  // branch the planner costs at 100 rows, becomes a whole-table scan per batch.
  const parts: SQL[] = []
  if (keys.length > 0)
    parts.push(sql`SELECT ${cols} FROM ${TABLE[role]} t
      JOIN ${KEY_ROWS[role].from(keys)} ON t.did = x.did AND t.rkey = x.rkey`)
  if (wholeRepos.length > 0)
    parts.push(sql`SELECT ${cols} FROM ${TABLE[role]} t
      WHERE t.did IN ${didSet(wholeRepos)}`)
  if (parts.length === 0) return new Map()
  // UNION ALL may repeat a row; the Map below keeps one per key.
  const found = await rows<LoadedRecord>(ex, sql.join(parts, sql` UNION ALL `))
  return new Map(
    found.map(({ did, rkey, ...r }) => [
      keyOf(did, rkey),
      { ...r, recompiles: Number(r.recompiles) },
    ]),
  )
}

interface VersionDbRow extends PromptVersion {
  did: string
  rkey: string
  cid: string | null
  changed: RecompileKind[] | null
  memoryFiles: string[] | null
}

/** The current versions of the given live prompts: what their next revision is compared with. */
export async function loadCurrentVersions(
  ex: Executor,
  keys: Array<{ did: string; rkey: string }>,
): Promise<Map<string, CurrentVersion>> {
  if (keys.length === 0) return new Map()
  const text = (field: string) =>
    sql`CASE WHEN jsonb_typeof(p.record->${field}) = 'string' THEN p.record->>${field} END`
  // Raw: the builder cannot join a jsonb_to_recordset.
  const found = await rows<VersionDbRow>(
    ex,
    sql`SELECT p.did, p.rkey, p.cid, ${text('content')} AS content,
        ${text('coreMemory')} AS "coreMemory", p.raw_system_hash AS "rawSystemHash",
        p.memfs_revision AS "memfsRevision", p.changed, p.memory_files AS "memoryFiles"
      FROM prompts p
      JOIN ${KEY_ROWS.prompt.from(keys)} ON p.did = x.did AND p.rkey = x.rkey
      WHERE NOT p.deleted`,
  )
  return new Map(
    found.map((r) => [
      keyOf(r.did, r.rkey),
      {
        cid: r.cid,
        version: {
          content: r.content,
          coreMemory: r.coreMemory,
          rawSystemHash: r.rawSystemHash,
          memfsRevision: r.memfsRevision,
        },
        anatomy:
          r.changed === null ? null : { changed: r.changed, memoryFiles: r.memoryFiles ?? [] },
      },
    ]),
  )
}

const { updatedAt: _updatedAt, ...accountFields } = getTableColumns(accounts)

export async function loadAccounts(ex: Executor, dids: string[]): Promise<Map<string, AccountRow>> {
  if (dids.length === 0) return new Map()
  const rows = await ex.select(accountFields).from(accounts).where(inDids(accounts.did, dids))
  return new Map(rows.map((r) => [r.did, r]))
}

const RECORD_KEYS = [
  'did',
  'rkey',
  'rev',
  'cid',
  'record',
  'deleted',
  'hidden',
  'indexedAt',
  'source',
  'verified',
  'commitCid',
] as const
/** What a newer rev replaces of a record row of any table. */
const RECORD_SET = RECORD_KEYS.filter((k) => k !== 'did' && k !== 'rkey')
const PROMPT_FACT_KEYS = [
  'baseFlags',
  'validationError',
  'contentBytes',
  'agentUri',
  'agentDid',
  'agentRkey',
  'rawSystemHash',
  'memfsRevision',
  'contentHash',
  'compiledUs',
  'evidence',
  'recompiles',
  'searchVector',
  'listRecord',
  'changed',
  'memoryFiles',
] as const
/**
 * A prompt's record from its parts (model/record-parts.ts): the rest came in the jsonb
 * parameter, content and coreMemory as text parameters in `t`, when they were taken out.
 */
const PROMPT_RECORD = sql`CASE WHEN t.did IS NULL THEN x.record ELSE x.record
  || CASE WHEN t.content IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('content', t.content) END
  || CASE WHEN t.core_memory IS NULL THEN '{}'::jsonb
    ELSE jsonb_build_object('coreMemory', t.core_memory) END END`
const PROMPT_TEXT_COLUMNS = ['did', 'rkey', 'content', 'core_memory']
/** schema.ts, prompts.listRecord: cut from the part that came without the texts. */
const LIST_RECORD = sql`CASE WHEN jsonb_typeof(x.record) = 'object'
  THEN x.record - 'content' - 'coreMemory' ELSE x.record END`
const PROMPT_ROWS = recordset(prompts, [...RECORD_KEYS, ...PROMPT_FACT_KEYS], {
  record: PROMPT_RECORD,
  listRecord: LIST_RECORD,
})
const PROMPT_SET = excludedSet(prompts, [...RECORD_SET, ...PROMPT_FACT_KEYS])
const AGENT_ROWS = recordset(agents, [...RECORD_KEYS, 'templateHash'])
const AGENT_SET = excludedSet(agents, [...RECORD_SET, 'templateHash'])
const CONVERSATION_ROWS = recordset(conversations, RECORD_KEYS)
const CONVERSATION_SET = excludedSet(conversations, RECORD_SET)

/** What a prompt row stores beyond the record columns, from the facts found at analysis. */
function promptFields(r: RecordRow) {
  const f = r.facts
  return {
    // Serialized as the record was analyzed, without its texts (see PromptFacts.recordParts).
    record: f && !r.deleted ? new JsonText(f.recordParts.rest) : r.record,
    baseFlags: f?.baseFlags ?? 0,
    validationError: f?.validationError ?? null,
    contentBytes: f?.contentBytes ?? null,
    agentUri: f?.agentUri ?? null,
    agentDid: f?.agentDid ?? null,
    agentRkey: f?.agentRkey ?? null,
    rawSystemHash: f?.rawSystemHash ?? null,
    memfsRevision: f?.memfsRevision ?? null,
    contentHash: f?.contentHash ?? null,
    compiledUs: f?.compiledUs ?? null,
    // Evidence for other prompts: valid, and compiled no later than 5 minutes after
    // the event that brought it (so replaying old data decides the same way).
    evidence:
      f !== null &&
      f.validationError === null &&
      f.compiledUs !== null &&
      f.compiledUs <= r.timeUs + EVIDENCE_HORIZON_US,
    recompiles: r.recompiles,
    searchVector: tsvectorLiteral(f?.searchWords ?? []),
    ...anatomyFields(r),
  }
}

/** The current version's recompile anatomy (SPEC 14); none on a tombstone. */
function anatomyFields(r: RecordRow) {
  return { changed: r.anatomy?.changed ?? null, memoryFiles: r.anatomy?.memoryFiles ?? null }
}

/** The texts taken out of a live prompt's record, as a row of PROMPT_TEXT_COLUMNS. */
function promptTexts(r: RecordRow): Array<Array<string | null>> {
  const p = r.facts?.recordParts
  if (!p || r.deleted || (p.content === null && p.coreMemory === null)) return []
  return [[r.did, r.rkey, p.content, p.coreMemory]]
}

export async function upsertRecords(
  ex: Executor,
  role: Role,
  rows: RecordRow[],
  hiddenOf: (did: string) => boolean,
  now: Date,
): Promise<void> {
  if (rows.length === 0) return
  const base = (r: RecordRow) => ({
    did: r.did,
    rkey: r.rkey,
    rev: r.rev,
    cid: r.cid,
    record: r.record,
    deleted: r.deleted,
    hidden: hiddenOf(r.did),
    indexedAt: now,
    source: r.provenance?.source ?? null,
    verified: r.provenance?.verified ?? false,
    commitCid: r.provenance?.commit ?? null,
  })
  // Raw, here and below: the builder inserts VALUES, not the rows of a jsonb_to_recordset,
  // and its onConflictDoUpdate has no WHERE over the conflicting row (the rev order).
  if (role === 'prompt') {
    for (const part of chunked(rows, TEXT_ROWS_PER_STATEMENT)) {
      const data = part.map((r) => ({ ...base(r), ...promptFields(r) }))
      const texts = textValues('t', PROMPT_TEXT_COLUMNS, part.flatMap(promptTexts))
      await ex.execute(sql`
        INSERT INTO prompts (${PROMPT_ROWS.names}, flags)
        SELECT ${PROMPT_ROWS.values}, x."baseFlags" FROM ${PROMPT_ROWS.from(data)}
          LEFT JOIN ${texts} ON t.did = x.did AND t.rkey = x.rkey
        ON CONFLICT (did, rkey) DO UPDATE SET ${PROMPT_SET},
          -- A tombstone has no flags; live rows get theirs from recomputeFlags.
          flags = CASE WHEN excluded.deleted THEN 0 ELSE prompts.flags END
        WHERE prompts.rev <= excluded.rev`)
    }
  } else if (role === 'agent') {
    const data = rows.map((r) => ({ ...base(r), templateHash: r.templateHash }))
    await ex.execute(sql`
      INSERT INTO agents (${AGENT_ROWS.names}) SELECT ${AGENT_ROWS.values} FROM ${AGENT_ROWS.from(data)}
      ON CONFLICT (did, rkey) DO UPDATE SET ${AGENT_SET}
      WHERE agents.rev <= excluded.rev`)
  } else {
    await ex.execute(sql`
      INSERT INTO conversations (${CONVERSATION_ROWS.names})
      SELECT ${CONVERSATION_ROWS.values} FROM ${CONVERSATION_ROWS.from(rows.map(base))}
      ON CONFLICT (did, rkey) DO UPDATE SET ${CONVERSATION_SET}
      WHERE conversations.rev <= excluded.rev`)
  }
}

const REVISION_ROWS = recordset(
  promptRevisions,
  Object.keys(getTableColumns(promptRevisions)) as Array<keyof typeof promptRevisions.$inferInsert>,
)

/** A revision as the indexer found it; seen now, its texts kept (revision_texts). */
export type NewRevision = Required<Omit<typeof promptRevisions.$inferInsert, 'seenAt' | 'textKept'>>

export async function insertRevisions(ex: Executor, rows: NewRevision[], now: Date): Promise<void> {
  if (rows.length === 0) return
  const data = rows.map((r) => ({ ...r, seenAt: now, textKept: true }))
  // Raw: the builder inserts VALUES, not the rows of a jsonb_to_recordset.
  await ex.execute(sql`
    INSERT INTO prompt_revisions (${REVISION_ROWS.names})
    SELECT ${REVISION_ROWS.values} FROM ${REVISION_ROWS.from(data)}
    ON CONFLICT DO NOTHING`)
}

const ACCOUNT_KEYS = Object.keys(getTableColumns(accounts)) as Array<
  keyof typeof accounts.$inferInsert
>
const ACCOUNT_ROWS = recordset(accounts, ACCOUNT_KEYS)
const ACCOUNT_SET = excludedSet(
  accounts,
  ACCOUNT_KEYS.filter((k) => k !== 'did'),
)

export async function upsertAccounts(ex: Executor, rows: AccountRow[], now: Date): Promise<void> {
  if (rows.length === 0) return
  const data = rows.map((a) => ({ ...a, updatedAt: now }))
  // Raw: the builder inserts VALUES, not the rows of a jsonb_to_recordset.
  await ex.execute(sql`
    INSERT INTO accounts (${ACCOUNT_ROWS.names}) SELECT ${ACCOUNT_ROWS.values} FROM ${ACCOUNT_ROWS.from(data)}
    ON CONFLICT (did) DO UPDATE SET ${ACCOUNT_SET}`)
}

/** What a tombstone keeps of each record table's row: nothing of the record. */
const PURGED = {
  prompt: {
    flags: 0,
    searchVector: null,
    contentHash: null,
    listRecord: null,
    changed: null,
    memoryFiles: null,
  },
  conversation: {},
  agent: { templateHash: null },
} as const

/** Account status `deleted`: every record of the repo becomes a tombstone; accounts stay. */
export async function purgeRepos(ex: Executor, dids: string[]): Promise<void> {
  if (dids.length === 0) return
  for (const role of ['prompt', 'conversation', 'agent'] as const) {
    const t = TABLE[role]
    await ex
      .update(t)
      .set({ deleted: true, cid: null, record: null, ...PURGED[role] })
      .where(and(inDids(t.did, dids), not(t.deleted)))
  }
  await ex.delete(promptRevisions).where(inDids(promptRevisions.did, dids))
  await ex.delete(revisionTexts).where(inDids(revisionTexts.did, dids))
}

export async function setHidden(ex: Executor, visibility: Map<string, boolean>): Promise<void> {
  if (visibility.size === 0) return
  const all = [...visibility.keys()]
  const hide = all.filter((did) => !visibility.get(did))
  for (const role of ['prompt', 'conversation', 'agent'] as const) {
    const t = TABLE[role]
    const hidden = hide.length > 0 ? inDids(t.did, hide) : sql`false`
    await ex.update(t).set({ hidden }).where(inDids(t.did, all))
  }
}

/**
 * Stores where the source stands. Not GREATEST: the sources keep their cursor from going
 * backwards (ingest/cursor-guard.ts), and a position that was refused later (a future time,
 * a seq the upstream calls FutureCursor) must be able to come down again.
 */
export async function saveCursor(ex: Executor, c: CursorPosition, now: Date): Promise<void> {
  await ex
    .insert(ingestCursors)
    .values({
      source: c.source,
      key: c.key,
      kind: c.cursor.kind,
      cursor: c.cursor.value,
      lastEventUs: c.lastEventUs,
      updatedAt: now,
    })
    .onConflictDoUpdate({
      target: [ingestCursors.source, ingestCursors.key],
      set: {
        kind: sql`excluded.kind`,
        cursor: sql`excluded.cursor`,
        lastEventUs: sql`COALESCE(excluded.last_event_us, ${ingestCursors.lastEventUs})`,
        updatedAt: sql`excluded.updated_at`,
      },
    })
}

const cursorOf = (source: string, key: string) =>
  and(eq(ingestCursors.source, source), eq(ingestCursors.key, key))

/** A source's stored position with its kind, as the last run left it; null when none. */
export async function readStoredCursor(
  db: Database,
  source: string,
  key: string,
): Promise<{ cursor: SourceCursor; lastEventUs: number | null; savedAtMs: number } | null> {
  const [r] = await db.orm
    .select({
      kind: ingestCursors.kind,
      value: ingestCursors.cursor,
      lastEventUs: ingestCursors.lastEventUs,
      savedAt: ingestCursors.updatedAt,
    })
    .from(ingestCursors)
    .where(cursorOf(source, key))
  if (!r) return null
  return {
    cursor: { kind: r.kind, value: Number(r.value) },
    lastEventUs: r.lastEventUs == null ? null : Number(r.lastEventUs),
    savedAtMs: r.savedAt.getTime(),
  }
}

/** Forgets a stored position found untrustworthy at start: the next run starts without it. */
export async function deleteCursor(db: Database, source: string, key: string): Promise<void> {
  await db.orm.delete(ingestCursors).where(cursorOf(source, key))
}

/** Forgets the stored source time of the newest event, found to be in the future at start. */
export async function clearLastEventUs(db: Database, source: string, key: string): Promise<void> {
  await db.orm.update(ingestCursors).set({ lastEventUs: null }).where(cursorOf(source, key))
}
