import { createHash } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Duplex } from 'node:stream'
import WebSocket from 'ws'

// A WebSocket pass-through that cuts its client's socket abruptly (no close frame, as a
// crashing upstream or a dropped NAT entry looks) after every so many frames, and once in
// the middle of a frame: the frame header and half its payload are written and flushed to
// the kernel, then the TCP connection is destroyed. Text and binary (zstd) frames pass as
// they are. The client side is written by hand (RFC 6455 handshake and unmasked server
// frames, no extensions) because no library writes half a frame. Plain HTTP GETs (the v2
// dictionary) are forwarded to the upstream unchanged, so a client needs only this origin.

export interface CutPlan {
  /** Frames forwarded (over all connections) before the next cut. */
  nextGap(): number
  /** True for the cut that happens mid-frame. */
  midFrame(cutNo: number): boolean
  /**
   * The mid-frame cut waits for a binary frame (text frames in between are forwarded), so a
   * zstd stream is really cut inside compressed bytes and not in a stray text frame.
   */
  midFrameBinary?: boolean
}

export interface Cut {
  /** Frames forwarded (over all connections) before it. */
  after: number
  midFrame: boolean
  /** The frame it happened in was binary (a mid-frame cut) or the next one was. */
  binary: boolean
  /** Mid-frame: payload bytes written of the frame's payload (0 < written < length). */
  written?: number
  length?: number
}

export interface CutProxy {
  url: string
  forwarded: number
  /** Of the frames forwarded, the binary ones. */
  binary: number
  cuts: Cut[]
  /** The query string each client connected with, in order. */
  requests: string[]
  /** Paths of the plain HTTP requests forwarded, in order. */
  httpRequests: string[]
  close(): Promise<void>
}

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11'

export async function startCutProxy(upstreamBase: string, plan: CutPlan): Promise<CutProxy> {
  const state: CutProxy = {
    url: '',
    forwarded: 0,
    binary: 0,
    cuts: [],
    requests: [],
    httpRequests: [],
    close: async () => {},
  }
  const http = createServer((req, res) => {
    state.httpRequests.push(req.url ?? '/')
    forwardHttp(upstreamBase, req.url ?? '/', res)
  })
  const sockets = new Set<Duplex>()
  let untilCut = plan.nextGap()
  http.on('upgrade', (req: IncomingMessage, socket: Duplex) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => socket.destroy())
    // The client's frames (none are needed here) are read and dropped.
    socket.on('data', () => {})
    const key = req.headers['sec-websocket-key']
    if (typeof key !== 'string') return void socket.destroy()
    const accept = createHash('sha1')
      .update(key + GUID)
      .digest('base64')
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`,
    )
    state.requests.push(new URL(req.url ?? '/', 'ws://x').search)
    const up = new WebSocket(new URL(req.url ?? '/', upstreamBase), { perMessageDeflate: false })
    let paused = false
    let cutting = false
    const cut = () => {
      up.terminate()
      socket.destroy()
    }
    socket.on('close', () => up.terminate())
    up.on('close', () => socket.destroy())
    up.on('error', () => socket.destroy())
    up.on('message', (data: Buffer, isBinary: boolean) => {
      if (socket.destroyed || cutting) return
      const frame = encodeFrame(data, isBinary)
      if (--untilCut <= 0) {
        const n = state.cuts.length + 1
        const midFrame = plan.midFrame(n)
        // A mid-frame cut needs a payload it can split (and a binary one when asked).
        const fits = data.length >= 2 && (isBinary || !plan.midFrameBinary)
        if (!midFrame || fits) {
          untilCut = plan.nextGap()
          cutting = true
          const c: Cut = { after: state.forwarded, midFrame, binary: isBinary }
          state.cuts.push(c)
          if (!midFrame) return cut()
          c.written = data.length >> 1
          c.length = data.length
          // Flushed before the destroy: a destroy drops what is still buffered in Node.
          return void socket.write(frame.subarray(0, headerLength(data.length) + c.written), cut)
        }
      }
      state.forwarded++
      if (isBinary) state.binary++
      // Messages already parsed still arrive after pause(): one drain listener at a time.
      if (!socket.write(frame) && !paused) {
        paused = true
        up.pause()
        socket.once('drain', () => {
          paused = false
          up.resume()
        })
      }
    })
  })
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', () => r()))
  state.url = `ws://127.0.0.1:${(http.address() as AddressInfo).port}`
  state.close = async () => {
    for (const s of sockets) s.destroy()
    http.closeAllConnections()
    await new Promise<void>((r) => http.close(() => r()))
  }
  return state
}

/** GET `path` from the upstream's HTTP origin and relay status, headers and body. */
function forwardHttp(upstreamBase: string, path: string, res: ServerResponse): void {
  const u = new URL(path, upstreamBase)
  u.protocol = u.protocol === 'wss:' ? 'https:' : 'http:'
  fetch(u, { signal: AbortSignal.timeout(10_000) })
    .then(async (r) => {
      const body = Buffer.from(await r.arrayBuffer())
      const headers: Record<string, string> = {}
      for (const [k, v] of r.headers)
        if (k !== 'content-encoding' && k !== 'transfer-encoding') headers[k] = v
      headers['content-length'] = String(body.length)
      res.writeHead(r.status, headers).end(body)
    })
    .catch((err: unknown) => res.writeHead(502).end(String(err)))
}

function headerLength(n: number): number {
  return n < 126 ? 2 : n < 65536 ? 4 : 10
}

/** One unmasked, final server frame (text or binary). */
export function encodeFrame(payload: Buffer, binary: boolean): Buffer {
  const n = payload.length
  const head = Buffer.alloc(headerLength(n))
  head[0] = 0x80 | (binary ? 0x2 : 0x1)
  if (n < 126) head[1] = n
  else if (n < 65536) {
    head[1] = 126
    head.writeUInt16BE(n, 2)
  } else {
    head[1] = 127
    head.writeBigUInt64BE(BigInt(n), 2)
  }
  return Buffer.concat([head, payload])
}
