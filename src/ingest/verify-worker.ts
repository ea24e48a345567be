import { parentPort } from 'node:worker_threads'
import { verifySignatureNative } from './native-verify.ts'
import type { VerifyReply, VerifyRequest } from './verify-pool.ts'

// One verification thread of the pool: a request in, a verdict (or the error's message,
// thrown again on the other side) out. Its did:key cache is its own.

const port = parentPort
if (!port) throw new Error('verify-worker.ts runs as a worker thread')
port.on('message', (batch: VerifyRequest[]) => {
  const replies: VerifyReply[] = batch.map(({ id, didKey, data, sig }) => {
    try {
      return { id, ok: verifySignatureNative(didKey, data, sig) }
    } catch (err) {
      return { id, error: err instanceof Error ? err.message : String(err) }
    }
  })
  port.postMessage(replies)
})
