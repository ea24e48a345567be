import { parentPort, workerData } from 'node:worker_threads'
import type { Nsids } from '../model/nsids.ts'
import { analyzePrompt, PromptValidator } from '../model/prompt-record.ts'
import type { AnalysisReply, AnalysisRequest } from './analysis-pool.ts'

// One analysis thread of the pool: prompt records in, their facts out (or the error's
// message). Its validator (the compiled lexicon) is its own. The texts stay behind: the
// main thread has them already (in the record it sent), so only the rest of the record's
// JSON comes back.

const port = parentPort
if (!port) throw new Error('analysis-worker.ts runs as a worker thread')
const { nsids } = workerData as { nsids: Nsids }
const validator = new PromptValidator(nsids.prompt)

port.on('message', (batch: AnalysisRequest[]) => {
  const replies: AnalysisReply[] = batch.map(({ id, did, rkey, record }) => {
    try {
      const { recordParts, ...facts } = analyzePrompt(validator, nsids, did, rkey, record)
      return { id, facts, rest: recordParts.rest }
    } catch (err) {
      return { id, error: err instanceof Error ? err.message : String(err) }
    }
  })
  port.postMessage(replies)
})
