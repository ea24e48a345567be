import type { SQL } from 'drizzle-orm'
import { type Database, rows } from '../client.ts'
import { asc, gt, max, sql } from '../orm.ts'
import { changes } from '../schema.ts'
import { columnsOf, keyArrays, type RawRow } from './columns.ts'

// The change log as readers see it. Feed reads are raw `sql`: a LATERAL probe with LIMIT,
// which the builder cannot say; the tail's repo poll uses the builder.

const CHANGE_KEYS = [
  'seq',
  'did',
  'collection',
  'rkey',
  'op',
  'cid',
  'flags',
  'changed',
  'at',
] as const

export type ChangeRow = Omit<
  RawRow<Pick<typeof changes.$inferSelect, (typeof CHANGE_KEYS)[number]>>,
  'seq'
> & {
  seq: number
  /** Its repo is hidden now: skipped, but the reader's position moves past it. */
  withheld: boolean
}

const CHUNK = sql.raw('SELECT seq, did, collection, rkey, op, cid, flags, changed, at FROM changes')

function withheldChanges(chunk: SQL, order: SQL): SQL {
  return sql`SELECT ${columnsOf(changes, 'c', CHANGE_KEYS)},
      (c.op <> 'delete' AND COALESCE(acc.hidden, false)) AS withheld
    FROM (${chunk}) c
    LEFT JOIN LATERAL (
      SELECT (NOT a.active OR a.operator_hidden) AS hidden FROM accounts a WHERE a.did = c.did LIMIT 1
    ) acc ON true
    ORDER BY c.seq ${order}`
}

/**
 * Up to `take` change rows after `since`, oldest first, each marked `withheld` when its
 * repo is hidden now and it is not a delete: a late reader must not learn what a takedown
 * withdrew, yet sees the delete. Withheld rows are returned so the keyset advances past them.
 * The account check is a LATERAL probe with LIMIT so the planner cannot turn it into a hash
 * of the whole accounts table.
 */
export function changesQuery(since: number, take: number): SQL {
  return withheldChanges(
    sql`${CHUNK} WHERE seq > ${since} ORDER BY seq ASC LIMIT ${take}`,
    sql.raw('ASC'),
  )
}

type Fetched = Omit<ChangeRow, 'seq'> & { seq: number | string }
const seqAsNumber = (rows: Fetched[]): ChangeRow[] =>
  rows.map((r) => ({ ...r, seq: Number(r.seq) }))

export async function readChanges(db: Database, since: number, take: number) {
  return seqAsNumber(await db.read<Fetched>(changesQuery(since, take)))
}

/**
 * readChanges on the monitor connection, for the change tail (api/changes/tail.ts): its poll
 * must not queue behind a saturated pool, or subscribers would see commits late when busy.
 */
export async function pollChanges(db: Database, since: number, take: number) {
  return seqAsNumber(await rows<Fetched>(db.monitor, changesQuery(since, take)))
}

/** The record a change line names, as stored now: its CID and JSON text. */
export interface CurrentRecord {
  cid: string | null
  json: string
}

export type RecordTable = 'prompts' | 'conversations' | 'agents'

// Built once per table: the keys travel as two text arrays (see Database.read).
const currentRecordsQuery = (table: RecordTable) => sql`
  SELECT t.did, t.rkey, t.cid, t.record::text AS json
  FROM unnest(${sql.placeholder('dids')}::text[], ${sql.placeholder('rkeys')}::text[]) AS k(did, rkey)
  JOIN ${sql.identifier(table)} t ON t.did = k.did AND t.rkey = k.rkey
  WHERE NOT t.deleted AND NOT t.hidden AND t.record IS NOT NULL`
const CURRENT_RECORDS: Record<RecordTable, SQL> = {
  prompts: currentRecordsQuery('prompts'),
  conversations: currentRecordsQuery('conversations'),
  agents: currentRecordsQuery('agents'),
}

/**
 * The current, visible records of `keys` in `table` (`did rkey` -> record): what a feed line
 * with `include=record` carries while its CID is still the current one.
 */
export async function readCurrentRecords(
  db: Database,
  table: RecordTable,
  keys: ReadonlyArray<{ did: string; rkey: string }>,
): Promise<Map<string, CurrentRecord>> {
  if (keys.length === 0) return new Map()
  const rows = await db.read<{ did: string; rkey: string; cid: string | null; json: string }>(
    CURRENT_RECORDS[table],
    keyArrays(keys),
  )
  return new Map(rows.map((r) => [`${r.did} ${r.rkey}`, { cid: r.cid, json: r.json }]))
}

/**
 * The newest change rows, newest first, for the UI's overview: the primary key read
 * backwards, with the same `withheld` probe as changesQuery.
 */
export function recentChangesQuery(take: number): SQL {
  return withheldChanges(sql`${CHUNK} ORDER BY seq DESC LIMIT ${take}`, sql.raw('DESC'))
}

export async function readRecentChanges(db: Database, take: number) {
  return seqAsNumber(await db.read<Fetched>(recentChangesQuery(take)))
}

/**
 * The repos of change rows after `since`, oldest first: all the change tail reads while no
 * reader needs whole rows (the answer cache only drops answers by repo).
 */
export async function changedReposSince(
  db: Database,
  since: number,
  take: number,
): Promise<Array<{ seq: number; did: string }>> {
  return db.monitor
    .select({ seq: changes.seq, did: changes.did })
    .from(changes)
    .where(gt(changes.seq, since))
    .orderBy(asc(changes.seq))
    .limit(take)
}

/** The newest seq of the change log, 0 when it is empty. */
export async function latestChangeSeq(db: Database): Promise<number> {
  const [r] = await db.monitor.select({ seq: max(changes.seq) }).from(changes)
  return Number(r?.seq ?? 0)
}
