import type { Logger } from 'pino'
import { createWorkerPool } from '../../workers/pool.ts'
import { checkSignatureInline, type SignatureCheck } from './native-verify.ts'

// Signature checks on worker threads. A verified commit costs one ECDSA verify (~0.3-0.5
// ms in OpenSSL), the largest single cost of the firehose source, and the main thread has
// decoding, the socket and the database client to run: checks go to workers while the
// main thread reads on. A worker that dies takes nothing with it: a check no worker
// answered runs here, so a crash never turns a valid commit into a skipped one.

export interface VerifyRequest {
  didKey: string
  data: Uint8Array
  sig: Uint8Array
}

export interface VerifyPool {
  check: SignatureCheck
  readonly threads: number
  close(): Promise<void>
}

const WORKER_URL = new URL('./verify-worker.ts', import.meta.url)

export interface VerifyPoolOptions {
  /** 0: checks run inline, on this thread. */
  threads: number
  logger: Logger
  /** The worker script; tests substitute one that fails. */
  workerUrl?: URL
}

export function createVerifyPool(opts: VerifyPoolOptions): VerifyPool {
  if (opts.threads <= 0) {
    return { check: checkSignatureInline, threads: 0, close: async () => {} }
  }
  const pool = createWorkerPool<VerifyRequest, { ok: boolean }>({
    name: 'signature',
    threads: opts.threads,
    workerUrl: opts.workerUrl ?? WORKER_URL,
    logger: opts.logger,
  })
  let closed = false
  return {
    threads: opts.threads,
    async check(didKey, data, sig) {
      if (closed) throw new Error('signature pool is closed')
      // slice(): a signature decoded from a frame is a view of the whole frame, and posting
      // a view copies its entire buffer.
      const reply = await pool.request({ didKey, data: data.slice(), sig: sig.slice() })
      if (reply === null) return checkSignatureInline(didKey, data, sig)
      // The worker's error is the inline check's error (a malformed key or signature).
      if ('error' in reply) throw new Error(reply.error)
      return reply.ok
    },
    async close() {
      closed = true
      await pool.close()
    },
  }
}
