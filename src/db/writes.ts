import { type SQL, sql } from 'drizzle-orm'
import type { CursorPosition } from '../model/events.ts'
import type { Role } from '../model/nsids.ts'
import { type AccountRow, keyOf, type RecordRow, type StoredRecord } from '../model/rows.ts'
import type { Database, Executor } from './client.ts'

// Set-based statements of the indexer. Rows travel as one JSON parameter expanded with
// jsonb_to_recordset: one round trip per statement whatever the batch size, no parameter
// limit, and the same SQL on postgres.js and PGlite.

const json = (v: unknown): SQL => sql`${JSON.stringify(v)}::jsonb`
export const TABLE: Record<Role, SQL> = {
  prompt: sql.raw('prompts'),
  conversation: sql.raw('conversations'),
  agent: sql.raw('agents'),
}
const EVIDENCE_HORIZON_US = 5 * 60 * 1_000_000

/**
 * DIDs for `did IN ...`. A short list goes as separate parameters, so the planner sees how
 * many there are: a jsonb array is always guessed at 100 elements, which for did-prefix
 * lookups on a large table is enough to prefer a scan of the whole table to index probes.
 */
export function didSet(dids: string[]): SQL {
  if (dids.length > 0 && dids.length <= 1000)
    return sql`(${sql.join(
      dids.map((d) => sql`${d}`),
      sql`, `,
    )})`
  return sql`(SELECT jsonb_array_elements_text(${json(dids)}))`
}

export async function loadRecords(
  db: Database,
  ex: Executor,
  role: Role,
  keys: Array<{ did: string; rkey: string }>,
  wholeRepos: string[],
): Promise<Map<string, StoredRecord>> {
  const extra =
    role === 'prompt' ? sql`t.recompiles, t.agent_uri` : sql`0 AS recompiles, NULL AS agent_uri`
  const cols = sql`t.did, t.rkey, t.rev, t.cid, t.deleted, ${extra}`
  // One index-driven branch per kind of input, and none for an empty one: an OR of the two
  // (or an empty branch the planner still costs at 100 rows) turns this into a scan of the
  // whole table per batch, which grows with the table.
  const parts: SQL[] = []
  if (keys.length > 0)
    parts.push(sql`SELECT ${cols} FROM ${TABLE[role]} t
      JOIN jsonb_to_recordset(${json(keys)}) AS x(did text, rkey text) ON t.did = x.did AND t.rkey = x.rkey`)
  if (wholeRepos.length > 0)
    parts.push(sql`SELECT ${cols} FROM ${TABLE[role]} t
      WHERE t.did IN ${didSet(wholeRepos)}`)
  if (parts.length === 0) return new Map()
  // UNION ALL may repeat a row; the Map below keeps one per key.
  const rows = await db.rows<
    Omit<StoredRecord, 'agentUri'> & { did: string; rkey: string; agent_uri: string | null }
  >(sql.join(parts, sql` UNION ALL `), ex)
  return new Map(
    rows.map((r) => [
      keyOf(r.did, r.rkey),
      {
        rev: r.rev,
        cid: r.cid,
        deleted: r.deleted,
        recompiles: Number(r.recompiles),
        agentUri: r.agent_uri,
      },
    ]),
  )
}

export async function loadAccounts(
  db: Database,
  ex: Executor,
  dids: string[],
): Promise<Map<string, AccountRow>> {
  const rows = await db.rows<Record<string, unknown>>(
    sql`SELECT did, active, status, handle, operator_hidden, account_seq, account_us, identity_seq,
               identity_us, last_rev, purged_rev, purged_us
        FROM accounts WHERE did IN (SELECT jsonb_array_elements_text(${json(dids)}))`,
    ex,
  )
  const num = (v: unknown) => (v == null ? null : Number(v))
  return new Map(
    rows.map((r) => [
      r.did as string,
      {
        did: r.did as string,
        active: r.active as boolean,
        status: r.status as string | null,
        handle: r.handle as string | null,
        operatorHidden: r.operator_hidden as boolean,
        accountSeq: num(r.account_seq),
        accountUs: num(r.account_us),
        identitySeq: num(r.identity_seq),
        identityUs: num(r.identity_us),
        lastRev: r.last_rev as string | null,
        purgedRev: r.purged_rev as string | null,
        purgedUs: num(r.purged_us),
      },
    ]),
  )
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
    indexed_at: now.toISOString(),
    source: r.provenance?.source ?? null,
    verified: r.provenance?.verified ?? false,
    commit_cid: r.provenance?.commit ?? null,
  })
  const common = sql`did text, rkey text, rev text, cid text, record jsonb, deleted boolean, hidden boolean, indexed_at timestamptz, source text, verified boolean, commit_cid text`
  const commonSet = sql`rev = excluded.rev, cid = excluded.cid, record = excluded.record,
    deleted = excluded.deleted, hidden = excluded.hidden, indexed_at = excluded.indexed_at,
    source = excluded.source, verified = excluded.verified, commit_cid = excluded.commit_cid`
  if (role === 'prompt') {
    const data = rows.map((r) => {
      const f = r.facts
      return {
        ...base(r),
        base_flags: f?.baseFlags ?? 0,
        validation_error: f?.validationError ?? null,
        content_bytes: f?.contentBytes ?? null,
        agent_uri: f?.agentUri ?? null,
        agent_did: f?.agentDid ?? null,
        agent_rkey: f?.agentRkey ?? null,
        raw_system_hash: f?.rawSystemHash ?? null,
        memfs_revision: f?.memfsRevision ?? null,
        compiled_us: f?.compiledUs ?? null,
        // Evidence for other prompts: valid, and compiled no later than 5 minutes after
        // the event that brought it (so replaying old data decides the same way).
        evidence:
          f !== null &&
          f.validationError === null &&
          f.compiledUs !== null &&
          f.compiledUs <= r.timeUs + EVIDENCE_HORIZON_US,
        recompiles: r.recompiles,
        search_words: f?.searchWords ?? [],
      }
    })
    await ex.execute(sql`
      INSERT INTO prompts (did, rkey, rev, cid, record, deleted, hidden, indexed_at, source, verified, commit_cid, flags, base_flags,
        validation_error, content_bytes, agent_uri, agent_did, agent_rkey, raw_system_hash,
        memfs_revision, compiled_us, evidence, recompiles, search_vector)
      SELECT did, rkey, rev, cid, record, deleted, hidden, indexed_at, source, verified, commit_cid, base_flags, base_flags,
        validation_error, content_bytes, agent_uri, agent_did, agent_rkey, raw_system_hash,
        memfs_revision, compiled_us, evidence, recompiles,
        array_to_tsvector(ARRAY(SELECT jsonb_array_elements_text(search_words)))
      FROM jsonb_to_recordset(${json(data)}) AS x(${common}, base_flags int, validation_error text,
        content_bytes int, agent_uri text, agent_did text, agent_rkey text, raw_system_hash text,
        memfs_revision text, compiled_us bigint, evidence boolean, recompiles int, search_words jsonb)
      ON CONFLICT (did, rkey) DO UPDATE SET ${commonSet}, base_flags = excluded.base_flags,
        -- A tombstone has no flags; live rows get theirs from recomputeFlags.
        flags = CASE WHEN excluded.deleted THEN 0 ELSE prompts.flags END,
        validation_error = excluded.validation_error, content_bytes = excluded.content_bytes,
        agent_uri = excluded.agent_uri, agent_did = excluded.agent_did, agent_rkey = excluded.agent_rkey,
        raw_system_hash = excluded.raw_system_hash, memfs_revision = excluded.memfs_revision,
        compiled_us = excluded.compiled_us, evidence = excluded.evidence, recompiles = excluded.recompiles,
        search_vector = excluded.search_vector
      WHERE prompts.rev <= excluded.rev`)
  } else if (role === 'agent') {
    const data = rows.map((r) => ({ ...base(r), template_hash: r.templateHash }))
    await ex.execute(sql`
      INSERT INTO agents (did, rkey, rev, cid, record, deleted, hidden, indexed_at, source, verified, commit_cid, template_hash)
      SELECT * FROM jsonb_to_recordset(${json(data)}) AS x(${common}, template_hash text)
      ON CONFLICT (did, rkey) DO UPDATE SET ${commonSet}, template_hash = excluded.template_hash
      WHERE agents.rev <= excluded.rev`)
  } else {
    await ex.execute(sql`
      INSERT INTO conversations (did, rkey, rev, cid, record, deleted, hidden, indexed_at, source, verified, commit_cid)
      SELECT * FROM jsonb_to_recordset(${json(rows.map(base))}) AS x(${common})
      ON CONFLICT (did, rkey) DO UPDATE SET ${commonSet}
      WHERE conversations.rev <= excluded.rev`)
  }
}

export async function insertRevisions(
  ex: Executor,
  rows: Array<{
    did: string
    rkey: string
    rev: string
    cid: string
    compiled_at: string | null
    raw_system_hash: string | null
    memfs_revision: string | null
    content_hash: string | null
    core_memory_hash: string | null
    core_memory_at: number | null
    core_memory_length: number | null
  }>,
  now: Date,
): Promise<void> {
  if (rows.length === 0) return
  await ex.execute(sql`
    INSERT INTO prompt_revisions (did, rkey, rev, cid, compiled_at, raw_system_hash, memfs_revision, content_hash, seen_at,
      text_kept, core_memory_hash, core_memory_at, core_memory_length)
    SELECT did, rkey, rev, cid, compiled_at, raw_system_hash, memfs_revision, content_hash, ${now.toISOString()}::timestamptz,
      true, core_memory_hash, core_memory_at, core_memory_length
    FROM jsonb_to_recordset(${json(rows)}) AS x(did text, rkey text, rev text, cid text, compiled_at text,
      raw_system_hash text, memfs_revision text, content_hash text, core_memory_hash text,
      core_memory_at int, core_memory_length int)
    ON CONFLICT DO NOTHING`)
}

export async function upsertAccounts(ex: Executor, rows: AccountRow[], now: Date): Promise<void> {
  if (rows.length === 0) return
  const data = rows.map((a) => ({
    did: a.did,
    active: a.active,
    status: a.status,
    handle: a.handle,
    operator_hidden: a.operatorHidden,
    account_seq: a.accountSeq,
    account_us: a.accountUs,
    identity_seq: a.identitySeq,
    identity_us: a.identityUs,
    last_rev: a.lastRev,
    purged_rev: a.purgedRev,
    purged_us: a.purgedUs,
  }))
  await ex.execute(sql`
    INSERT INTO accounts (did, active, status, handle, operator_hidden, account_seq, account_us,
      identity_seq, identity_us, last_rev, purged_rev, purged_us, updated_at)
    SELECT x.*, ${now.toISOString()}::timestamptz FROM jsonb_to_recordset(${json(data)}) AS x(did text,
      active boolean, status text, handle text, operator_hidden boolean, account_seq bigint,
      account_us bigint, identity_seq bigint, identity_us bigint, last_rev text, purged_rev text,
      purged_us bigint)
    ON CONFLICT (did) DO UPDATE SET active = excluded.active, status = excluded.status,
      handle = excluded.handle, operator_hidden = excluded.operator_hidden,
      account_seq = excluded.account_seq, account_us = excluded.account_us,
      identity_seq = excluded.identity_seq, identity_us = excluded.identity_us,
      last_rev = excluded.last_rev, purged_rev = excluded.purged_rev, purged_us = excluded.purged_us, updated_at = excluded.updated_at`)
}

/** Account status `deleted`: every record of the repo becomes a tombstone; accounts stay. */
export async function purgeRepos(ex: Executor, dids: string[]): Promise<void> {
  if (dids.length === 0) return
  const list = didSet(dids)
  for (const role of ['prompt', 'conversation', 'agent'] as Role[]) {
    const extra =
      role === 'agent'
        ? sql`, template_hash = NULL`
        : role === 'prompt'
          ? sql`, flags = 0, search_vector = NULL`
          : sql``
    await ex.execute(sql`UPDATE ${TABLE[role]} SET deleted = true, cid = NULL, record = NULL ${extra}
      WHERE did IN ${list} AND NOT deleted`)
  }
  await ex.execute(sql`DELETE FROM prompt_revisions WHERE did IN ${list}`)
  await ex.execute(sql`DELETE FROM revision_texts WHERE did IN ${list}`)
}

export async function setHidden(ex: Executor, visibility: Map<string, boolean>): Promise<void> {
  if (visibility.size === 0) return
  const all = [...visibility.keys()]
  const hide = all.filter((did) => !visibility.get(did))
  const hidden = hide.length > 0 ? sql`t.did IN ${didSet(hide)}` : sql`false`
  for (const role of ['prompt', 'conversation', 'agent'] as Role[]) {
    await ex.execute(
      sql`UPDATE ${TABLE[role]} t SET hidden = ${hidden} WHERE t.did IN ${didSet(all)}`,
    )
  }
}

/**
 * Stores where the source stands. Not GREATEST: the sources keep their cursor from going
 * backwards (ingest/cursor-guard.ts), and a position that was refused later (a future time,
 * a seq the upstream calls FutureCursor) must be able to come down again.
 */
export async function saveCursor(ex: Executor, c: CursorPosition, now: Date): Promise<void> {
  await ex.execute(sql`
    INSERT INTO ingest_cursors (source, key, cursor, last_event_us, updated_at)
    VALUES (${c.source}, ${c.key}, ${c.cursor}, ${c.lastEventUs}, ${now.toISOString()}::timestamptz)
    ON CONFLICT (source, key) DO UPDATE SET
      cursor = excluded.cursor,
      last_event_us = COALESCE(excluded.last_event_us, ingest_cursors.last_event_us),
      updated_at = excluded.updated_at`)
}

/** Forgets a stored position found untrustworthy at start: the next run starts without it. */
export async function deleteCursor(ex: Executor, source: string, key: string): Promise<void> {
  await ex.execute(sql`DELETE FROM ingest_cursors WHERE source = ${source} AND key = ${key}`)
}

/** Forgets the stored source time of the newest event, found to be in the future at start. */
export async function clearLastEventUs(ex: Executor, source: string, key: string): Promise<void> {
  await ex.execute(
    sql`UPDATE ingest_cursors SET last_event_us = NULL WHERE source = ${source} AND key = ${key}`,
  )
}
