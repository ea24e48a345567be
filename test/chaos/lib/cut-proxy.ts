import { createHash } from 'node:crypto'
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Duplex } from 'node:stream'
import WebSocket from 'ws'

// A WebSocket pass-through that cuts its client's socket abruptly (no close frame, as a
// crashing upstream or a dropped NAT entry looks) after every so many frames, and once in
// the middle of a frame: the frame header and half its payload are written, then the TCP
// connection is destroyed. The client side is written by hand (RFC 6455 handshake and
// unmasked server frames, no extensions) because no library writes half a frame.

export interface CutPlan {
  /** Frames forwarded (over all connections) before the next cut. */
  nextGap(): number
  /** True for the cut that happens mid-frame. */
  midFrame(cutNo: number): boolean
}

export interface CutProxy {
  url: string
  forwarded: number
  cuts: Array<{ after: number; midFrame: boolean }>
  /** The query string each client connected with, in order. */
  requests: string[]
  close(): Promise<void>
}

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11'

export async function startCutProxy(upstreamBase: string, plan: CutPlan): Promise<CutProxy> {
  const http = createServer((_req, res) => res.writeHead(404).end())
  const sockets = new Set<Duplex>()
  const state: CutProxy = { url: '', forwarded: 0, cuts: [], requests: [], close: async () => {} }
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
    const cut = () => {
      up.terminate()
      socket.destroy()
    }
    socket.on('close', () => up.terminate())
    up.on('close', () => socket.destroy())
    up.on('error', () => socket.destroy())
    up.on('message', (data: Buffer, isBinary: boolean) => {
      if (socket.destroyed) return
      const frame = encodeFrame(data, isBinary)
      if (--untilCut <= 0) {
        const midFrame = plan.midFrame(state.cuts.length + 1)
        state.cuts.push({ after: state.forwarded, midFrame })
        untilCut = plan.nextGap()
        if (midFrame)
          socket.write(frame.subarray(0, headerLength(data.length) + (data.length >> 1)))
        return cut()
      }
      state.forwarded++
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
