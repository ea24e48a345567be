import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { cborDecodeMulti, cborEncode } from '@atproto/common'
import { WebSocket, WebSocketServer } from 'ws'
import type { JetstreamEvent } from '../../demo-network/generator.ts'
import { createRandom } from '../../demo-network/random.ts'
import { type ExpectedOp, LettaRepos } from '../../test/helpers/firehose/frames.ts'
import { sleep } from './stats.ts'
import { benchGenerator } from './traffic.ts'

// A relay on loopback that sequences the network's traffic at a steady rate for as long as
// it runs, as the product meets it when it follows the network: `rate` frames a second, of
// which `lettaShare` are Letta writes built as they are sent (signed commits with their MST
// proofs from LettaRepos, so each Letta repo's chain holds for the whole run), the rest the
// other collections' commits of a pre-built frame set (bench:firehose's), sent round and
// round with a new seq and time. Their authors hold no Letta record, so the product decodes
// and drops them, as it does the network's posts and likes.

export interface PacedRelayOptions {
  /** Pre-built #commit frames of other collections. */
  noise: Uint8Array[]
  rate: number
  lettaShare: number
  lettaDids: number
  /** Called as each Letta event goes out, with its op (null for #account) and the time. */
  onLetta: (ev: JetstreamEvent, op: ExpectedOp | null, atMs: number) => void
}

export interface PacedRelay {
  url: string
  /** did -> did:key of every Letta repo so far (live: a PLC stub may serve it). */
  keys: Record<string, string>
  /** Frames sequenced so far. */
  seq(): number
  stop(): Promise<void>
}

/** Kept for a consumer that reconnects with a cursor: a few seconds of stream. */
const HISTORY = 20_000

function withSeq(frame: Uint8Array, seq: number, time: string): Uint8Array {
  const [header, body] = cborDecodeMulti(frame) as [object, Record<string, unknown>]
  const h = cborEncode(header)
  const b = cborEncode({ ...body, seq, time })
  const out = new Uint8Array(h.length + b.length)
  out.set(h, 0)
  out.set(b, h.length)
  return out
}

export async function startPacedRelay(o: PacedRelayOptions): Promise<PacedRelay> {
  const letta = new LettaRepos()
  const gen = benchGenerator({ dids: o.lettaDids, seed: 53, noiseRatio: 0 })
  const rnd = createRandom(59)
  // A ring: frame `s` at s % HISTORY.
  const history: Uint8Array[] = new Array(HISTORY)
  let seq = 0
  let running = true
  let stop: () => void = () => {}
  const stopped = new Promise<void>((r) => {
    stop = r
  })
  const http = createServer((_req, res) => res.writeHead(404).end())
  const wss = new WebSocketServer({ server: http, path: '/xrpc/com.atproto.sync.subscribeRepos' })
  // The stream starts with its first consumer: nothing is sent into the void while the
  // product starts up.
  let firstConsumer: () => void = () => {}
  const consumed = new Promise<void>((r) => {
    firstConsumer = r
  })
  wss.on('connection', (ws, req) => {
    ws.on('error', () => {})
    firstConsumer()
    const raw = new URL(req.url ?? '/', 'http://x').searchParams.get('cursor')
    if (raw === null) return
    // A resume: what it missed, as far as the history reaches.
    const first = Math.max(1, seq - HISTORY + 1)
    for (let s = Math.max(Number(raw) + 1, first); s <= seq; s++) ws.send(history[s % HISTORY])
  })
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', () => r()))
  const { port } = http.address() as AddressInfo

  const next = async (): Promise<Uint8Array> => {
    const time = new Date().toISOString()
    while (rnd.next() < o.lettaShare) {
      const ev = gen.next()
      const made = await letta.frame(ev, seq + 1, time)
      if (!made) continue
      o.onLetta(ev, made.op, Date.now())
      return made.frame
    }
    return withSeq(o.noise[seq % o.noise.length], seq + 1, time)
  }
  const pump = (async () => {
    await Promise.race([consumed, stopped])
    const start = performance.now()
    while (running) {
      const due = Math.floor(((performance.now() - start) / 1000) * o.rate)
      while (seq < due && running) {
        const frame = await next()
        seq++
        history[seq % HISTORY] = frame
        for (const ws of wss.clients) if (ws.readyState === WebSocket.OPEN) ws.send(frame)
      }
      await sleep(5)
    }
  })()
  return {
    url: `ws://127.0.0.1:${port}`,
    keys: letta.keys,
    seq: () => seq,
    stop: async () => {
      running = false
      stop()
      await pump
      // What was sent is delivered: terminating a socket drops what it still buffers, and a
      // Letta write among it would count as never shown.
      const drainedBy = performance.now() + 10_000
      while ([...wss.clients].some((ws) => ws.bufferedAmount > 0)) {
        if (performance.now() > drainedBy) break
        await sleep(10)
      }
      for (const ws of wss.clients) ws.terminate()
      wss.close()
      await new Promise((r) => http.close(r))
    },
  }
}
