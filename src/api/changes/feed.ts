import { nsidsOf } from '../../config/config.ts'
import type { AppContext } from '../../context/context.ts'
import {
  type ChangeRow,
  type CurrentRecord,
  type RecordTable,
  readChanges,
  readCurrentRecords,
} from '../../db/read/changes.ts'
import { changeLine } from '../reads.ts'
import { getRevisionRecords } from '../revision-reads.ts'

/** A chunk of change rows as read, and the current records of its upserts (include=record). */
export interface FeedChunk {
  rows: ChangeRow[]
  records: Map<string, CurrentRecord> | null
}

/**
 * The change feed's reads and lines, shared by GET /v1/changes and its live subscription
 * (hub.ts), and XRPC getChanges, so all say the same thing about the same row.
 */
export interface ChangeFeed {
  /** Rows per read: `pageSize`, or at most 50 with records (a prompt may be 200 kB). */
  chunkSize(withRecords: boolean): number
  /** Up to `take` rows after `since` (withheld ones too: a reader moves past them). */
  read(since: number, take: number, withRecords: boolean): Promise<FeedChunk>
  /** The records of the upsert rows among `rows`, by `collection did rkey cid`. */
  recordsOf(rows: ChangeRow[]): Promise<Map<string, CurrentRecord>>
  /**
   * One feed line per row not withheld, each ending with a newline; with the record when
   * the chunk has records. A subscription frame is the same line without its newline.
   */
  lines(chunk: FeedChunk): string[]
  /**
   * Up to `limit` lines after `since`, a chunk at a time: each chunk's lines and the seq of
   * its last row (withheld rows move it too). Ends after a short chunk, the end of the table
   * as of that read; a later call picks up the rest.
   */
  pages(since: number, limit: number, withRecords: boolean): AsyncGenerator<FeedPage>
}

/** One chunk of the feed as GET /v1/changes sends it, and where to resume after it. */
export interface FeedPage {
  lines: string[]
  cursor: number
}

export function changeFeed(ctx: Pick<AppContext, 'db' | 'config'>, pageSize: number): ChangeFeed {
  const { db, config } = ctx
  // With records a chunk holds up to this many of them, so an answer's memory stays
  // bounded whatever `limit` asks for.
  const recordPageSize = Math.min(pageSize, 50)
  const tables = new Map<string, RecordTable>([
    [config.promptNsid, 'prompts'],
    [nsidsOf(config).conversation, 'conversations'],
    [nsidsOf(config).agent, 'agents'],
  ])

  /**
   * The records of the upsert rows, by `collection did rkey cid`: the current ones, and for
   * prompt rows whose version was replaced since, that version rebuilt from the revision
   * history when it was kept whole (revision_texts and prompt_revisions.record_rest).
   */
  async function recordsOf(rows: ChangeRow[]): Promise<Map<string, CurrentRecord>> {
    const out = new Map<string, CurrentRecord>()
    for (const [collection, table] of tables) {
      const keys = rows.filter((r) => r.collection === collection && r.op !== 'delete')
      for (const [k, v] of await readCurrentRecords(db, table, keys))
        out.set(`${collection} ${k} ${v.cid}`, v)
    }
    const older = rows.flatMap((r) =>
      r.collection === config.promptNsid &&
      r.op !== 'delete' &&
      r.cid !== null &&
      !out.has(`${r.collection} ${r.did} ${r.rkey} ${r.cid}`)
        ? [{ did: r.did, rkey: r.rkey, cid: r.cid }]
        : [],
    )
    for (const r of await getRevisionRecords(db, older))
      out.set(`${config.promptNsid} ${r.did} ${r.rkey} ${r.cid}`, { cid: r.cid, json: r.json })
    return out
  }

  const chunkSize = (withRecords: boolean) => (withRecords ? recordPageSize : pageSize)

  async function read(since: number, take: number, withRecords: boolean): Promise<FeedChunk> {
    const rows = await readChanges(db, since, take)
    return { rows, records: withRecords ? await recordsOf(rows) : null }
  }

  function lines({ rows, records }: FeedChunk): string[] {
    const out: string[] = []
    for (const row of rows) {
      if (row.withheld) continue
      const record = records
        ? (records.get(`${row.collection} ${row.did} ${row.rkey} ${row.cid}`) ?? null)
        : undefined
      out.push(changeLine(row, config.promptNsid, record))
    }
    return out
  }

  async function* pages(since: number, limit: number, withRecords: boolean) {
    let cursor = since
    let sent = 0
    for (;;) {
      const asked = Math.min(chunkSize(withRecords), limit - sent)
      const chunk = await read(cursor, asked, withRecords)
      const shown = lines(chunk)
      sent += shown.length
      cursor = chunk.rows.at(-1)?.seq ?? cursor
      yield { lines: shown, cursor }
      if (chunk.rows.length < asked || sent >= limit) return
    }
  }

  return { chunkSize, read, recordsOf, lines, pages }
}
