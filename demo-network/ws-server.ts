import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { WebSocket, WebSocketServer } from 'ws'
import type { LogReader } from './event-log.ts'

// The socket plumbing both local Jetstreams (v1 and v2) share: listening, keeping the set
// of open connections, and tearing everything down at once.

export interface SocketReader extends LogReader {
  ws: WebSocket
}

/** Listens on `host`:`port` (0: a free port) and resolves to the port taken. */
export async function listen(http: Server, port: number, host: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject)
    http.listen(port, host, () => resolve())
  })
  return (http.address() as AddressInfo).port
}

/**
 * Keeps `conn` in `conns` while its socket is open. On close or error it is marked closed
 * and woken, so a reader waiting for new events ends instead of waiting forever.
 */
export function track<C extends SocketReader>(conns: Set<C>, conn: C): void {
  conns.add(conn)
  const end = () => {
    conn.closed = true
    conns.delete(conn)
    conn.wake?.()
  }
  conn.ws.on('close', end)
  conn.ws.on('error', end)
}

/** Cuts every connection abruptly, as a crashing upstream or a network drop does. */
export function terminateAll(conns: Iterable<SocketReader>): void {
  for (const c of conns) c.ws.terminate()
}

export async function closeServers(
  conns: Iterable<SocketReader>,
  wss: WebSocketServer,
  http: Server,
): Promise<void> {
  terminateAll(conns)
  await new Promise<void>((resolve) => wss.close(() => resolve()))
  http.closeAllConnections()
  await new Promise<void>((resolve) => http.close(() => resolve()))
}

/** What both local Jetstreams report about their connections and log, and how they stop. */
export interface LogServerHandle {
  /** Open client connections. */
  readonly connections: number
  /** Events in the log. */
  readonly size: number
  /** Characters of frame text in the log (what maxLogBytes bounds). */
  readonly logChars: number
  dropConnections(): void
  close(): Promise<void>
}

export interface LogServerParts {
  conns: Set<SocketReader>
  log: { items: unknown[]; chars: number }
  wss: WebSocketServer
  http: Server
}

/**
 * A server's handle: its own members in `own`, with the shared ones added. They are defined
 * on `own`, not copied into a new object, so every getter keeps reading live state.
 */
export function serverHandle<T extends object>(p: LogServerParts, own: T): T & LogServerHandle {
  const shared: LogServerHandle = {
    get connections() {
      return p.conns.size
    },
    get size() {
      return p.log.items.length
    },
    get logChars() {
      return p.log.chars
    },
    dropConnections: () => terminateAll(p.conns),
    close: () => closeServers(p.conns, p.wss, p.http),
  }
  return Object.defineProperties(own, Object.getOwnPropertyDescriptors(shared)) as T &
    LogServerHandle
}
