import type { AddressInfo } from 'node:net'
import { cborDecodeMulti, cborEncode } from '@atproto/common'
import WebSocket, { WebSocketServer } from 'ws'

export interface HostileRelay {
  url: string
  /** The `cursor` query parameter of each connection, in order ('' when absent). */
  cursors: string[]
  close(): Promise<void>
}

/** What to change in the frame of a given upstream seq: its seq, its time. */
export type FrameRewrite = Map<number, { seq?: number; time?: string }>

/**
 * A subscribeRepos pass-through that lies about some frames: the seq (a huge one, one going
 * backwards) or the time, the parts a relay adds outside the signed commit. Every connection
 * gets the same lies, as from a consistently hostile or broken relay.
 */
export async function startHostileRelay(
  upstream: string,
  rewrite: FrameRewrite,
): Promise<HostileRelay> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 })
  await new Promise<void>((r) => wss.once('listening', () => r()))
  const cursors: string[] = []
  wss.on('connection', (client, req) => {
    const path = req.url ?? '/'
    cursors.push(new URL(path, 'ws://x').searchParams.get('cursor') ?? '')
    const up = new WebSocket(new URL(path, upstream))
    up.on('message', (data: Buffer) => client.send(rewriteFrame(data, rewrite), { binary: true }))
    up.on('close', () => client.close())
    up.on('error', () => client.terminate())
    client.on('close', () => up.terminate())
  })
  const { port } = wss.address() as AddressInfo
  return {
    url: `ws://127.0.0.1:${port}`,
    cursors,
    close: () =>
      new Promise<void>((resolve) => {
        for (const c of wss.clients) c.terminate()
        wss.close(() => resolve())
      }),
  }
}

function rewriteFrame(data: Buffer, rewrite: FrameRewrite): Buffer {
  const [header, body] = cborDecodeMulti(new Uint8Array(data)) as [unknown, Record<string, unknown>]
  const change = typeof body?.seq === 'number' ? rewrite.get(body.seq) : undefined
  if (!change) return data
  const out = { ...body, ...change }
  return Buffer.concat([cborEncode(header), cborEncode(out)])
}
