import { getPromptView } from '../../src/api/catalog/reads.ts'
import type { PromptView } from '../../src/api/prompt-views.ts'
import type { Database } from '../../src/db/client.ts'
import type { Nsids } from '../../src/model/nsids.ts'

// One visible prompt as the API shows it, through the lookup's own read (without the
// reasons): what the indexer tests compare after applying events.

export async function getPrompt(
  db: Database,
  nsids: Nsids,
  did: string,
  rkey: string,
): Promise<PromptView | null> {
  const answer = await getPromptView(db, nsids, did, rkey)
  if (!answer) return null
  const { reasons: _reasons, ...view } = answer
  return view
}
