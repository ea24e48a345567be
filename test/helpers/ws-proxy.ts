import type { AddressInfo } from 'node:net'
import WebSocket, { WebSocketServer } from 'ws'

export interface CuttingProxy {
  url: string
  /** The `cursor` query parameter of each connection, in order ('' when absent). */
  cursors: string[]
  close(): Promise<void>
}

/**
 * A subscribeRepos pass-through that hangs up on its first client after `cutAfter`
 * frames, the way a relay restart looks from outside: for reconnect and resume tests.
 */
export async function startCuttingProxy(upstream: string, cutAfter: number): Promise<CuttingProxy> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 })
  await new Promise<void>((r) => wss.once('listening', () => r()))
  const cursors: string[] = []
  wss.on('connection', (client, req) => {
    const path = req.url ?? '/'
    cursors.push(new URL(path, 'ws://x').searchParams.get('cursor') ?? '')
    const limit = cursors.length === 1 ? cutAfter : Number.POSITIVE_INFINITY
    let sent = 0
    const up = new WebSocket(new URL(path, upstream))
    up.on('message', (data: Buffer) => {
      if (sent >= limit) return
      client.send(data, { binary: true })
      // A clean close: the frames already sent arrive before it.
      if (++sent >= limit) {
        client.close(1011, 'cut')
        up.terminate()
      }
    })
    up.on('close', () => client.close())
    up.on('error', () => client.terminate())
    client.on('close', () => up.terminate())
  })
  const port = (wss.address() as AddressInfo).port
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
