import type { Database } from '../client.ts'
import { and, desc, eq } from '../orm.ts'
import { readAgainIfConnectionLost } from '../retry.ts'
import { ingestCursors } from '../schema.ts'
import { readStoredCursor } from '../writes.ts'
import { readVisibleCounts } from './visible-counts.ts'

// The counts of /v1/stats and the stored ingestion positions (the CLI resumes from them).

export interface IngestStatus {
  source: string | null
  cursor: number | null
  lagSeconds: number | null
  lastEventAt: string | null
}

export async function getIngestStatus(
  db: Database,
  source: string | null,
  key: string | null,
): Promise<IngestStatus> {
  const [r] = await readAgainIfConnectionLost(() =>
    db.orm
      .select({
        source: ingestCursors.source,
        cursor: ingestCursors.cursor,
        lastEventUs: ingestCursors.lastEventUs,
      })
      .from(ingestCursors)
      .where(
        source && key
          ? and(eq(ingestCursors.source, source), eq(ingestCursors.key, key))
          : undefined,
      )
      .orderBy(desc(ingestCursors.updatedAt))
      .limit(1),
  )
  if (!r) return { source, cursor: null, lagSeconds: null, lastEventAt: null }
  const lastUs = r.lastEventUs == null ? null : Number(r.lastEventUs)
  return {
    source: r.source,
    cursor: Number(r.cursor),
    lagSeconds: lastUs == null ? null : Math.max(0, (Date.now() * 1000 - lastUs) / 1e6),
    lastEventAt: lastUs == null ? null : new Date(lastUs / 1000).toISOString(),
  }
}

export async function getStats(
  db: Database,
  ingest: { source: string | null; key: string | null },
) {
  const [counts, status] = await Promise.all([
    readVisibleCounts(db),
    getIngestStatus(db, ingest.source, ingest.key),
  ])
  return { ...counts, ingest: status }
}

/** The stored cursor value of a source, as the last run left it; null when none. */
export async function getCursor(db: Database, source: string, key: string): Promise<number | null> {
  return (await readStoredCursor(db, source, key))?.cursor.value ?? null
}
