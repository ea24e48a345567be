import { answerRequests } from '../../workers/pool.ts'
import { verifySignatureNative } from './native-verify.ts'
import type { VerifyRequest } from './verify-pool.ts'

// One verification thread of the pool: a request in, a verdict (or the error's message,
// thrown again on the other side) out. Its did:key cache is its own.

export default answerRequests(({ didKey, data, sig }: VerifyRequest) => ({
  ok: verifySignatureNative(didKey, data, sig),
}))
