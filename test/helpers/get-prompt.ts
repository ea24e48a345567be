import { sql } from 'drizzle-orm'
import type { Database } from '../../src/db/client.ts'
import {
  type PromptRow,
  type PromptView,
  promptSelect,
  toPromptView,
} from '../../src/db/queries.ts'
import type { Nsids } from '../../src/model/nsids.ts'

// One visible prompt as the API shows it, read straight from the database: what the
// indexer tests compare after applying events (the product reads prompts through api/).

export async function getPrompt(
  db: Database,
  nsids: Nsids,
  did: string,
  rkey: string,
): Promise<PromptView | null> {
  const rows = await db.rows<PromptRow>(sql`SELECT ${promptSelect()} FROM prompts p
    WHERE p.did = ${did} AND p.rkey = ${rkey} AND NOT p.deleted AND NOT p.hidden`)
  return rows[0] ? toPromptView(rows[0], nsids) : null
}
