import { getPromptAnswer, type PromptAnswer } from '../../src/api/catalog/reads.ts'
import type { PromptView } from '../../src/api/prompt-views.ts'
import type { Database } from '../../src/db/client.ts'
import { type PromptAnswerRow, readPromptAnswers } from '../../src/db/read/prompts.ts'
import type { Nsids } from '../../src/model/nsids.ts'

// One visible prompt as the API shows it, through the lookup's own read: what the indexer
// tests compare after applying events.

/** One prompt's answer row: a batch of one key. */
export async function readPromptAnswer(
  db: Database,
  did: string,
  rkey: string,
): Promise<PromptAnswerRow | null> {
  const [row] = await readPromptAnswers(db, [{ did, rkey }])
  return row ?? null
}

/** The lookup's answer with the record parsed. */
export async function getPromptView(
  db: Database,
  nsids: Nsids,
  did: string,
  rkey: string,
): Promise<PromptAnswer | null> {
  const got = await getPromptAnswer((k) => readPromptAnswer(db, k.did, k.rkey), nsids, did, rkey)
  return got && { ...got.answer, record: JSON.parse(got.recordJson.toString()) }
}

/** The same without the reasons. */
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
