import { Worker } from 'node:worker_threads'
import type { Logger } from 'pino'
import { checkSignatureInline, type SignatureCheck } from './native-verify.ts'

// Signature checks on worker threads. A verified commit costs one ECDSA verify (~0.3-0.5
// ms in OpenSSL), the largest single cost of the firehose source, and the main thread has
// decoding, the socket and the database client to run: checks go to workers, batched per
// turn of the event loop, while the main thread reads on. A worker that dies takes
// nothing with it: its pending checks run again here, so a crash never turns a valid
// commit into a skipped one.

export interface VerifyRequest {
  id: number
  didKey: string
  data: Uint8Array
  sig: Uint8Array
}

export type VerifyReply = { id: number; ok: boolean } | { id: number; error: string }

export interface VerifyPool {
  check: SignatureCheck
  readonly threads: number
  close(): Promise<void>
}

interface Pending {
  req: VerifyRequest
  resolve: (ok: boolean) => void
  reject: (err: Error) => void
}

interface Slot {
  worker: Worker
  pending: Map<number, Pending>
  outbox: VerifyRequest[]
}

const WORKER_URL = new URL('./verify-worker.ts', import.meta.url)

function runInline(p: Pending): void {
  checkSignatureInline(p.req.didKey, p.req.data, p.req.sig).then(p.resolve, p.reject)
}

export interface VerifyPoolOptions {
  /** 0: checks run inline, on this thread. */
  threads: number
  logger: Logger
  /** The worker script; tests substitute one that fails. */
  workerUrl?: URL
}

export function createVerifyPool(opts: VerifyPoolOptions): VerifyPool {
  const { logger } = opts
  if (opts.threads <= 0) {
    return {
      check: checkSignatureInline,
      threads: 0,
      close: async () => {},
    }
  }
  let nextId = 0
  let closed = false
  let flushScheduled = false
  const slots: Slot[] = []

  const spawn = (): Slot => {
    // An idle pool never holds the process open; close() is what ends the workers.
    const worker = new Worker(opts.workerUrl ?? WORKER_URL)
    worker.unref()
    const slot: Slot = { worker, pending: new Map(), outbox: [] }
    worker.on('message', (replies: VerifyReply[]) => {
      for (const r of replies) {
        const p = slot.pending.get(r.id)
        if (!p) continue
        slot.pending.delete(r.id)
        if ('error' in r) p.reject(new Error(r.error))
        else p.resolve(r.ok)
      }
    })
    const fail = (reason: unknown) => {
      if (closed) return
      const i = slots.indexOf(slot)
      if (i === -1) return
      logger.error(
        { err: reason, pending: slot.pending.size },
        'signature worker died; its checks run inline and a new worker starts',
      )
      // Every request still in the outbox is pending too.
      for (const p of slot.pending.values()) runInline(p)
      slot.pending.clear()
      slot.outbox = []
      slots[i] = spawn()
    }
    worker.on('error', fail)
    worker.on('exit', (code) => fail(new Error(`worker exited with code ${code}`)))
    return slot
  }
  for (let i = 0; i < opts.threads; i++) slots.push(spawn())

  const flush = () => {
    flushScheduled = false
    for (const slot of slots) {
      if (slot.outbox.length === 0) continue
      slot.worker.postMessage(slot.outbox)
      slot.outbox = []
    }
  }

  return {
    threads: opts.threads,
    check(didKey, data, sig) {
      if (closed) return Promise.reject(new Error('signature pool is closed'))
      // slice(): a signature decoded from a frame is a view of the whole frame, and posting
      // a view copies its entire buffer.
      const req: VerifyRequest = { id: nextId++, didKey, data: data.slice(), sig: sig.slice() }
      let slot = slots[0]
      for (const s of slots) if (s.pending.size < slot.pending.size) slot = s
      return new Promise<boolean>((resolve, reject) => {
        slot.pending.set(req.id, { req, resolve, reject })
        slot.outbox.push(req)
        if (!flushScheduled) {
          flushScheduled = true
          setImmediate(flush)
        }
      })
    },
    async close() {
      if (closed) return
      closed = true
      // Whatever is still pending is answered here rather than left hanging.
      for (const slot of slots) {
        for (const p of slot.pending.values()) runInline(p)
        slot.pending.clear()
      }
      await Promise.all(slots.map((s) => s.worker.terminate()))
    },
  }
}
