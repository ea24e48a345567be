import type { AddressInfo } from 'node:net'
import WebSocket, { WebSocketServer } from 'ws'

export interface RelayProxy {
  url: string
  /** The `cursor` query parameter of each connection, in order ('' when absent). */
  cursors: string[]
  /** Sends a frame to every client connected now. */
  broadcast(raw: Buffer): void
  close(): Promise<void>
}

/** One client's connection: its number (0 for the first) and both sockets. */
export interface ProxiedConnection {
  index: number
  client: WebSocket
  up: WebSocket
}

/**
 * A subscribeRepos pass-through on a port the OS picks: each client gets its own upstream
 * connection, and `onConnection` returns what to do with each upstream frame (pass it,
 * change it, drop it). Either side closing closes the other, as a relay does.
 */
export async function startRelayProxy(
  upstream: string,
  onConnection: (c: ProxiedConnection) => (data: Buffer) => void,
): Promise<RelayProxy> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 })
  await new Promise<void>((r) => wss.once('listening', () => r()))
  const cursors: string[] = []
  wss.on('connection', (client, req) => {
    const path = req.url ?? '/'
    cursors.push(new URL(path, 'ws://x').searchParams.get('cursor') ?? '')
    const up = new WebSocket(new URL(path, upstream))
    up.on('message', onConnection({ index: cursors.length - 1, client, up }))
    up.on('close', () => client.close())
    up.on('error', () => client.terminate())
    client.on('close', () => up.terminate())
  })
  const { port } = wss.address() as AddressInfo
  return {
    url: `ws://127.0.0.1:${port}`,
    cursors,
    broadcast(raw) {
      for (const c of wss.clients) c.send(raw, { binary: true })
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const c of wss.clients) c.terminate()
        wss.close(() => resolve())
      }),
  }
}

export type CuttingProxy = Omit<RelayProxy, 'broadcast'>

/**
 * A subscribeRepos pass-through that hangs up on its first client after `cutAfter`
 * frames, the way a relay restart looks from outside: for reconnect and resume tests.
 */
export async function startCuttingProxy(upstream: string, cutAfter: number): Promise<CuttingProxy> {
  return startRelayProxy(upstream, ({ index, client, up }) => {
    const limit = index === 0 ? cutAfter : Number.POSITIVE_INFINITY
    let sent = 0
    return (data) => {
      if (sent >= limit) return
      client.send(data, { binary: true })
      // A clean close: the frames already sent arrive before it.
      if (++sent >= limit) {
        client.close(1011, 'cut')
        up.terminate()
      }
    }
  })
}
