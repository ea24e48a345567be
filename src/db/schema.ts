import type { InferSelectModel } from 'drizzle-orm'
import type { CursorKind } from '../model/cursor.ts'
import { FLAG_BITS, type FlagName } from '../model/flags.ts'
import type { ListSort } from '../model/list-sort.ts'
import {
  bigint,
  bigserial,
  boolean,
  check,
  customType,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  sql,
  text,
  timestamp,
} from './orm.ts'

// Record tables are keyed (did, rkey), did first, so the store can be sharded by did. A
// delete keeps a tombstone (`deleted`, its rev) that refuses a replayed older create, and
// `emitted_*` is the state last written to the change log, so a no-op replay emits nothing.

const recordColumns = {
  did: text('did').notNull(),
  rkey: text('rkey').notNull(),
  rev: text('rev').notNull(),
  cid: text('cid'),
  record: jsonb('record'),
  deleted: boolean('deleted').notNull().default(false),
  hidden: boolean('hidden').notNull().default(false),
  indexedAt: timestamp('indexed_at', { withTimezone: true, mode: 'date' }).notNull(),
  emittedCid: text('emitted_cid'),
  emittedVisible: boolean('emitted_visible').notNull().default(false),
  /** Provenance (SPEC 4): `firehose`, `jetstream`, `backfill` or `replay`; null before it was kept. */
  source: text('source'),
  /** The commit's signature and MST proof were checked. */
  verified: boolean('verified').notNull().default(false),
  /** CID of the commit the record came with, when the source names it. */
  commitCid: text('commit_cid'),
}

/**
 * One partial index per flag for filtered lists, its predicate spelled from FLAG_BITS (an
 * index predicate takes no parameters, hence the literal).
 */
const FLAG_INDEXES: Array<[string, FlagName]> = [
  ['prompts_orphaned_idx', 'orphaned'],
  ['prompts_mismatched_idx', 'mismatched'],
  ['prompts_stale_template_idx', 'staleTemplate'],
  ['prompts_stale_memory_idx', 'staleMemory'],
  ['prompts_detached_idx', 'coreMemoryDetached'],
  ['prompts_invalid_idx', 'invalid'],
]

/**
 * The sort keys of the list orders other than the record key's, as their indexes hold them
 * (columns prefixed by `t`). Never null, so an absent value ranks last in a descending order
 * and a cursor's bound stays one range of the index.
 */
export const LIST_SORT_KEYS = {
  compiled: (t = '') => `COALESCE(${t}compiled_us, '-9223372036854775808'::bigint)`,
  indexed: (t = '') => `${t}indexed_at`,
  recompiles: (t = '') => `${t}recompiles`,
  size: (t = '') => `COALESCE(${t}content_bytes, -1)`,
} satisfies Record<Exclude<ListSort, 'created'>, (t?: string) => string>

const tsvector = customType<{ data: string }>({ dataType: () => 'tsvector' })

export const prompts = pgTable(
  'prompts',
  {
    ...recordColumns,
    /** Flag bits (see model/flags.ts); 0 = ok. */
    flags: integer('flags').notNull().default(0),
    /** Bits that depend on this record alone: mismatched, coreMemoryDetached, invalid. */
    baseFlags: integer('base_flags').notNull().default(0),
    emittedFlags: integer('emitted_flags'),
    validationError: text('validation_error'),
    contentBytes: integer('content_bytes'),
    agentUri: text('agent_uri'),
    /** The agent record `agent` names, when it names one of the agent collection. */
    agentDid: text('agent_did'),
    agentRkey: text('agent_rkey'),
    rawSystemHash: text('raw_system_hash'),
    memfsRevision: text('memfs_revision'),
    /**
     * Lowercase hex SHA-256 of the UTF-8 content, as the indexer hashed it once: the key of
     * the current text in revision_texts, the base the next revision's delta names. Null
     * for rows written before it was kept (their content is hashed in SQL then).
     */
    contentHash: text('content_hash'),
    /** compiledAt as µs since the epoch, when it is a strict atproto datetime. */
    compiledUs: bigint('compiled_us', { mode: 'number' }),
    /** May serve as staleness evidence for others: valid, and compiledAt not in the future. */
    evidence: boolean('evidence').notNull().default(false),
    recompiles: integer('recompiles').notNull().default(0),
    /**
     * The record without content and coreMemory, so a list page never detoasts the texts.
     * Written by db/writes.ts, not generated, since a generated column re-cut them on every write.
     */
    listRecord: jsonb('list_record'),
    /**
     * The words of content for /v1/search (model/search-words.ts), written with the record
     * only: a generated column would re-parse the content on every flag update.
     */
    searchVector: tsvector('search_vector'),
    /**
     * What changed in the current version since the revision before it (SPEC 14, model/
     * recompile-anatomy.ts): `template`, `memory`, `metadata`, `other`; empty for the first.
     * Null for rows indexed before it was kept.
     */
    changed: text('changed').array(),
    /** Memory files whose blocks changed in the current version (SPEC 14). */
    memoryFiles: text('memory_files').array(),
  },
  (t) => [
    primaryKey({ columns: [t.did, t.rkey] }),
    // Keyset pages in the SPEC's order (rkey desc, did), one partial index per filter.
    index('prompts_page_idx').on(t.rkey.desc(), t.did).where(sql`NOT deleted AND NOT hidden`),
    index('prompts_ok_idx')
      .on(t.rkey.desc(), t.did)
      .where(sql`NOT deleted AND NOT hidden AND flags = 0`),
    ...FLAG_INDEXES.map(([name, flag]) =>
      index(name)
        .on(t.rkey.desc(), t.did)
        .where(
          sql`NOT deleted AND NOT hidden AND (flags & ${sql.raw(String(FLAG_BITS[flag]))}) <> 0`,
        ),
    ),
    index('prompts_search_idx').using('gin', t.searchVector).where(sql`NOT deleted AND NOT hidden`),
    // Staleness groups (same repo, same agent at-uri), ordered by compile time.
    index('prompts_agent_group_idx').on(t.did, t.agentUri, t.compiledUs),
    // Prompts of any repo naming one agent record: an agent write re-flags them.
    index('prompts_agent_record_idx').on(t.agentDid, t.agentRkey),
    // Keyset pages of the other list orders: (key, did, rkey), all descending.
    ...Object.entries(LIST_SORT_KEYS).map(([sort, key]) =>
      index(`prompts_${sort}_page_idx`)
        .on(sql.raw(`(${key()}) DESC`), t.did.desc(), t.rkey.desc())
        .where(sql`NOT deleted AND NOT hidden`),
    ),
  ],
)

export const promptRevisions = pgTable(
  'prompt_revisions',
  {
    did: text('did').notNull(),
    rkey: text('rkey').notNull(),
    rev: text('rev').notNull(),
    cid: text('cid').notNull(),
    compiledAt: text('compiled_at'),
    rawSystemHash: text('raw_system_hash'),
    memfsRevision: text('memfs_revision'),
    /** Lowercase hex SHA-256 of the UTF-8 content. */
    contentHash: text('content_hash'),
    seenAt: timestamp('seen_at', { withTimezone: true, mode: 'date' }).notNull(),
    /** Content and coreMemory of this revision are in revision_texts (false: indexed before). */
    textKept: boolean('text_kept').notNull().default(false),
    /** Lowercase hex SHA-256 of coreMemory, when it is a string. */
    coreMemoryHash: text('core_memory_hash'),
    /**
     * Where coreMemory lies in content (UTF-16 offset and length), the usual case: it then
     * costs nothing. Null when it is not part of content: it is a text of its own.
     */
    coreMemoryAt: integer('core_memory_at'),
    coreMemoryLength: integer('core_memory_length'),
    /**
     * The record without content and coreMemory (those are in revision_texts): with them,
     * this revision's whole record, which a feed line with include=record carries once a
     * later version replaced it. Null for revisions indexed before it was kept.
     */
    recordRest: jsonb('record_rest'),
    /** What changed since the revision before it (SPEC 14); null: indexed before it was kept. */
    changed: text('changed').array(),
    memoryFiles: text('memory_files').array(),
  },
  (t) => [primaryKey({ columns: [t.did, t.rkey, t.rev] })],
)

/**
 * One row per distinct revision text of a repo, keyed by its hash; `body` is the text, or
 * a line delta against the text `base` names, with `depth` capped so a read applies a
 * bounded chain. Texts are never shared across repos, so a purge drops them and a hidden
 * repo's text never backs a visible one's.
 */
export const revisionTexts = pgTable(
  'revision_texts',
  {
    did: text('did').notNull(),
    hash: text('hash').notNull(),
    base: text('base'),
    depth: integer('depth').notNull().default(0),
    /** UTF-16 length of the whole text (what a delta decodes to), for a quick check. */
    length: integer('length').notNull(),
    body: text('body').notNull(),
  },
  (t) => [primaryKey({ columns: [t.did, t.hash] })],
)

export const conversations = pgTable('conversations', recordColumns, (t) => [
  primaryKey({ columns: [t.did, t.rkey] }),
])

export const agents = pgTable(
  'agents',
  {
    ...recordColumns,
    /** Lowercase hex SHA-256 of `system`, when the record has a string `system`. */
    templateHash: text('template_hash'),
  },
  (t) => [primaryKey({ columns: [t.did, t.rkey] })],
)

export const accounts = pgTable(
  'accounts',
  {
    did: text('did').primaryKey(),
    active: boolean('active').notNull().default(true),
    status: text('status'),
    handle: text('handle'),
    /** The operator's own takedown list, on top of the account status. */
    operatorHidden: boolean('operator_hidden').notNull().default(false),
    /** Upstream seq / time (µs) of the last account event applied: older ones are ignored. */
    accountSeq: bigint('account_seq', { mode: 'number' }),
    accountUs: bigint('account_us', { mode: 'number' }),
    identitySeq: bigint('identity_seq', { mode: 'number' }),
    identityUs: bigint('identity_us', { mode: 'number' }),
    /** Newest commit rev seen for the repo. */
    lastRev: text('last_rev'),
    /** Set when the account was purged: commits at or below it are stale replays. */
    purgedRev: text('purged_rev'),
    /** Source time (µs) of the purge: commits from before it are replays of a deleted repo. */
    purgedUs: bigint('purged_us', { mode: 'number' }),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [index('accounts_handle_idx').on(t.handle)],
)

export const changes = pgTable(
  'changes',
  {
    did: text('did').notNull(),
    seq: bigserial('seq', { mode: 'number' }).notNull(),
    collection: text('collection').notNull(),
    rkey: text('rkey').notNull(),
    op: text('op').notNull(),
    cid: text('cid'),
    flags: integer('flags'),
    /** A prompt upsert's recompile anatomy (SPEC 14): the `changed` of the version it names. */
    changed: text('changed').array(),
    at: timestamp('at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.did, t.seq] }), index('changes_seq_idx').on(t.seq)],
)

/**
 * One cursor per (source, upstream), with what it counts (`kind`, model/cursor.ts): a `seq`
 * and a `time_us` never compare, and a source resumes only from the kinds it names.
 */
export const ingestCursors = pgTable(
  'ingest_cursors',
  {
    source: text('source').notNull(),
    key: text('key').notNull(),
    kind: text('kind', { enum: ['seq', 'time_us'] })
      .$type<CursorKind>()
      .notNull(),
    cursor: bigint('cursor', { mode: 'number' }).notNull(),
    lastEventUs: bigint('last_event_us', { mode: 'number' }),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.source, t.key] }),
    check('ingest_cursors_kind', sql`${t.kind} IN ('seq', 'time_us')`),
  ],
)

/** Repos a backfill has finished, so a restarted backfill resumes where it stopped. */
export const backfillRepos = pgTable('backfill_repos', {
  did: text('did').primaryKey(),
  rev: text('rev'),
  records: integer('records').notNull().default(0),
  finishedAt: timestamp('finished_at', { withTimezone: true, mode: 'date' }).notNull(),
})

/**
 * The progress of each backfill run (db/backfill-runs.ts), so the overview of any process on
 * this database can say one is under way; the last few runs are kept, older ones deleted.
 */
export const backfillRuns = pgTable('backfill_runs', {
  id: text('id').primaryKey(),
  startedAt: timestamp('started_at', { withTimezone: true, mode: 'date' }).notNull(),
  updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull(),
  listed: integer('listed').notNull(),
  listingDone: boolean('listing_done').notNull(),
  done: integer('done').notNull(),
  skipped: integer('skipped').notNull(),
  failed: integer('failed').notNull(),
  records: bigint('records', { mode: 'number' }).notNull(),
  finishedAt: timestamp('finished_at', { withTimezone: true, mode: 'date' }),
})

/**
 * Sync 1.1 chain state of each tracked repo (SPEC 4): the rev and MST root (`data`) of the
 * last accepted commit and whether the stored records still follow it, written in the same
 * transaction as the records it covers.
 */
export const repoChain = pgTable(
  'repo_chain',
  {
    did: text('did').primaryKey(),
    rev: text('rev'),
    data: text('data'),
    commitCid: text('commit_cid'),
    /** `synchronized`, `desynchronized` or `resyncing`. */
    syncState: text('sync_state').notNull(),
    syncReason: text('sync_reason'),
    /** When the repo entered its current sync state. */
    syncSince: timestamp('sync_since', { withTimezone: true, mode: 'date' }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [index('repo_chain_state_idx').on(t.syncState, t.syncSince)],
)

// Row types as the schema defines them: what the query builder returns (property names), and
// what a raw statement selecting `t.*` returns (`dbColumnNames`: the columns' own names).
export type PromptRecord = typeof prompts.$inferSelect
export type RevisionDbRow = InferSelectModel<typeof promptRevisions, { dbColumnNames: true }>
export type RevisionTextDbRow = typeof revisionTexts.$inferSelect

/**
 * Visible rows per record table and flag bits, kept exact by statement triggers (migration
 * 0011) in each write's own transaction, so /v1/stats reads a few rows instead of scanning.
 */
export const visibleCounts = pgTable(
  'visible_counts',
  {
    tbl: text('tbl').notNull(),
    flags: integer('flags').notNull(),
    n: bigint('n', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.tbl, t.flags] })],
)
