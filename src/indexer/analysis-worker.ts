import { workerData } from 'piscina'
import type { Nsids } from '../model/nsids.ts'
import { analyzePrompt, PromptValidator } from '../model/prompt-record.ts'
import { answerRequests } from '../workers/pool.ts'
import type { AnalysisRequest, AnalysisResult } from './analysis-pool.ts'

// One analysis thread of the pool: prompt records in, their facts out (or the error's
// message). Its validator (the compiled lexicon) is its own. The texts stay behind: the
// main thread has them already (in the record it sent), so only the rest of the record's
// JSON comes back.

const { nsids } = workerData as { nsids: Nsids }
const validator = new PromptValidator(nsids.prompt)

export default answerRequests(({ did, rkey, record }: AnalysisRequest): AnalysisResult => {
  const { recordParts, ...facts } = analyzePrompt(validator, nsids, did, rkey, record)
  return { facts, rest: recordParts.rest }
})
