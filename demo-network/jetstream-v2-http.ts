import type { ServerResponse } from 'node:http'
import type { Socket } from 'node:net'

// HTTP details of the local Jetstream v2 server: parameter checks, XRPC error answers.

/** Section 2's 400s that a client of this product could trigger. */
export function invalid(p: URLSearchParams): string | null {
  for (const legacy of ['wantedCollections', 'wantedDids', 'requireHello', 'compress'])
    if (p.has(legacy))
      return `${legacy} is a v1 parameter; use collections / dids on subscribeEvents`
  const kinds = p.getAll('kinds')
  if (kinds.some((k) => !['commit', 'identity', 'account', 'sync'].includes(k)))
    return 'unknown kind'
  if (p.has('collections') && kinds.length > 0 && !kinds.includes('commit'))
    return 'collections needs kinds to include commit'
  const c = p.get('cursor')
  if (c !== null && !/^\d+$/.test(c)) return 'cursor must be a non-negative integer'
  return null
}

export function reply(res: ServerResponse, status: number, error: string, message: string) {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify({ error, message }))
}

export function refuse(socket: Socket, status: number, error: string, message: string) {
  const body = JSON.stringify({ error, message })
  socket.end(
    `HTTP/1.1 ${status} ${status === 400 ? 'Bad Request' : 'Error'}\r\n` +
      `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
      `connection: close\r\n\r\n${body}`,
  )
}

export function seqIn(text: string): number | null {
  try {
    const seq = (JSON.parse(text) as { payload?: { seq?: unknown } }).payload?.seq
    return typeof seq === 'number' ? seq : null
  } catch {
    return null
  }
}
