import { type PromptView, toPromptView } from '../../src/api/prompt-views.ts'
import type { Database } from '../../src/db/client.ts'
import { readPrompt } from '../../src/db/read/prompts.ts'
import type { Nsids } from '../../src/model/nsids.ts'

// One visible prompt as the API shows it, read straight from the database: what the
// indexer tests compare after applying events (the product reads prompts through api/).

export async function getPrompt(
  db: Database,
  nsids: Nsids,
  did: string,
  rkey: string,
): Promise<PromptView | null> {
  const row = await readPrompt(db, did, rkey)
  return row ? toPromptView(row, nsids) : null
}
