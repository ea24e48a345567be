import { and, desc, eq, sql } from 'drizzle-orm'
import type { Database } from '../client.ts'
import { agents, conversations, ingestCursors } from '../schema.ts'
import { countPromptsByFlag } from './prompts.ts'

// The counts of /v1/stats and the stored ingestion positions (the CLI resumes from them).

const visible = (t: typeof conversations | typeof agents) =>
  and(eq(t.deleted, false), eq(t.hidden, false))

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
  const [r] = await db.orm
    .select({
      source: ingestCursors.source,
      cursor: ingestCursors.cursor,
      lastEventUs: ingestCursors.lastEventUs,
    })
    .from(ingestCursors)
    .where(
      source && key ? and(eq(ingestCursors.source, source), eq(ingestCursors.key, key)) : undefined,
    )
    .orderBy(desc(ingestCursors.updatedAt))
    .limit(1)
  if (!r) return { source, cursor: null, lagSeconds: null, lastEventAt: null }
  const lastUs = r.lastEventUs == null ? null : Number(r.lastEventUs)
  return {
    source: r.source,
    cursor: Number(r.cursor),
    lagSeconds: lastUs == null ? null : Math.max(0, (Date.now() * 1000 - lastUs) / 1e6),
    lastEventAt: lastUs == null ? null : new Date(lastUs / 1000).toISOString(),
  }
}

async function countVisible(db: Database, t: typeof conversations | typeof agents) {
  const [r] = await db.orm.select({ n: sql<number>`count(*)::int` }).from(t).where(visible(t))
  return Number(r?.n ?? 0)
}

/** The counts of /v1/stats: visible records and prompts by flag (each scans its table). */
export async function countRecords(db: Database) {
  const [prompts, conversationCount, agentCount] = await Promise.all([
    countPromptsByFlag(db),
    countVisible(db, conversations),
    countVisible(db, agents),
  ])
  return {
    prompts: prompts.total,
    conversations: conversationCount,
    agents: agentCount,
    flags: prompts.flags,
  }
}

export type RecordCounts = Awaited<ReturnType<typeof countRecords>>

export async function getStats(
  db: Database,
  ingest: { source: string | null; key: string | null },
) {
  const [counts, status] = await Promise.all([
    countRecords(db),
    getIngestStatus(db, ingest.source, ingest.key),
  ])
  return { ...counts, ingest: status }
}

/** The stored position of a source, as the last run left it. */
export async function getStoredPosition(
  db: Database,
  source: string,
  key: string,
): Promise<{ cursor: number; lastEventUs: number | null } | null> {
  const [r] = await db.orm
    .select({ cursor: ingestCursors.cursor, lastEventUs: ingestCursors.lastEventUs })
    .from(ingestCursors)
    .where(and(eq(ingestCursors.source, source), eq(ingestCursors.key, key)))
  if (!r) return null
  return {
    cursor: Number(r.cursor),
    lastEventUs: r.lastEventUs == null ? null : Number(r.lastEventUs),
  }
}

export async function getCursor(db: Database, source: string, key: string): Promise<number | null> {
  return (await getStoredPosition(db, source, key))?.cursor ?? null
}
