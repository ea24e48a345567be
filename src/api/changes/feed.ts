import { nsidsOf } from '../../config/config.ts'
import type { AppContext } from '../../context/context.ts'
import {
  type ChangeRow,
  type CurrentRecord,
  type RecordTable,
  readChanges,
  readCurrentRecords,
} from '../../db/read/changes.ts'
import { flagsToNames } from '../../model/flags.ts'
import { getRevisionRecords } from '../revision-reads.ts'

/** A chunk of change rows as read, and the current records of its upserts (include=record). */
export interface FeedChunk {
  rows: ChangeRow[]
  records: Map<string, CurrentRecord> | null
}

/** One chunk of the feed as GET /v1/changes sends it, and where to resume after it. */
export interface FeedPage {
  lines: string[]
  cursor: number
}

/**
 * One NDJSON line. Flags are names for prompts, [] for other collections, null on delete.
 * With include=record an upsert carries its record when still current, else null and
 * `superseded: true`.
 */
function changeLine(r: ChangeRow, promptNsid: string, record?: CurrentRecord | null): string {
  const deleted = r.op === 'delete'
  const flags = deleted
    ? null
    : r.collection === promptNsid
      ? flagsToNames(Number(r.flags ?? 0))
      : []
  const line = JSON.stringify({
    seq: r.seq,
    op: r.op,
    collection: r.collection,
    uri: `at://${r.did}/${r.collection}/${r.rkey}`,
    cid: deleted ? null : r.cid,
    flags,
    // A prompt upsert's recompile anatomy (SPEC 14); null on other lines, as flags is on a
    // delete, so every line has one shape.
    changed: !deleted && r.collection === promptNsid ? (r.changed ?? null) : null,
    at: new Date(r.at).toISOString(),
  })
  if (record === undefined || deleted) return `${line}\n`
  const current = record !== null && record.cid === r.cid
  // The stored JSON text goes in as it is, without a parse and a serialization.
  const tail = current ? `,"record":${record.json}}` : ',"record":null,"superseded":true}'
  return `${line.slice(0, -1)}${tail}\n`
}

/** The feed's reads and lines, shared by /v1/changes, hub.ts and XRPC getChanges alike. */
export class ChangeFeed {
  readonly #db: AppContext['db']
  readonly #promptNsid: string
  readonly #pageSize: number
  readonly #tables: Map<string, RecordTable>

  constructor(ctx: Pick<AppContext, 'db' | 'config'>, pageSize: number) {
    const nsids = nsidsOf(ctx.config)
    this.#db = ctx.db
    this.#promptNsid = nsids.prompt
    this.#pageSize = pageSize
    this.#tables = new Map<string, RecordTable>([
      [nsids.prompt, 'prompts'],
      [nsids.conversation, 'conversations'],
      [nsids.agent, 'agents'],
    ])
  }

  /** With records a chunk holds at most 50 (a prompt may be 200 kB), whatever `limit` asks. */
  chunkSize(withRecords: boolean): number {
    return withRecords ? Math.min(this.#pageSize, 50) : this.#pageSize
  }

  /**
   * The records of the upsert rows, by `collection did rkey cid`: the current ones, and a
   * replaced prompt version rebuilt from the revision history when it was kept whole.
   */
  async recordsOf(rows: ChangeRow[]): Promise<Map<string, CurrentRecord>> {
    const out = new Map<string, CurrentRecord>()
    for (const [collection, table] of this.#tables) {
      const keys = rows.filter((r) => r.collection === collection && r.op !== 'delete')
      for (const [k, v] of await readCurrentRecords(this.#db, table, keys))
        out.set(`${collection} ${k} ${v.cid}`, v)
    }
    const older = rows.flatMap((r) =>
      r.collection === this.#promptNsid &&
      r.op !== 'delete' &&
      r.cid !== null &&
      !out.has(`${r.collection} ${r.did} ${r.rkey} ${r.cid}`)
        ? [{ did: r.did, rkey: r.rkey, cid: r.cid }]
        : [],
    )
    for (const r of await getRevisionRecords(this.#db, older))
      out.set(`${this.#promptNsid} ${r.did} ${r.rkey} ${r.cid}`, { cid: r.cid, json: r.json })
    return out
  }

  /** Up to `take` rows after `since` (withheld ones too: a reader moves past them). */
  async read(since: number, take: number, withRecords: boolean): Promise<FeedChunk> {
    const rows = await readChanges(this.#db, since, take)
    return { rows, records: withRecords ? await this.recordsOf(rows) : null }
  }

  /** A line per row not withheld, with its record when the chunk has records. */
  lines({ rows, records }: FeedChunk): string[] {
    const out: string[] = []
    for (const row of rows) {
      if (row.withheld) continue
      const record = records
        ? (records.get(`${row.collection} ${row.did} ${row.rkey} ${row.cid}`) ?? null)
        : undefined
      out.push(changeLine(row, this.#promptNsid, record))
    }
    return out
  }

  /**
   * Up to `limit` lines after `since`, a chunk at a time, each with the seq of its last row
   * (withheld rows move it too); ends after a short chunk, the end of the table as of then.
   */
  async *pages(since: number, limit: number, withRecords: boolean): AsyncGenerator<FeedPage> {
    let cursor = since
    let sent = 0
    for (;;) {
      const asked = Math.min(this.chunkSize(withRecords), limit - sent)
      const chunk = await this.read(cursor, asked, withRecords)
      const shown = this.lines(chunk)
      sent += shown.length
      cursor = chunk.rows.at(-1)?.seq ?? cursor
      yield { lines: shown, cursor }
      if (chunk.rows.length < asked || sent >= limit) return
    }
  }
}
