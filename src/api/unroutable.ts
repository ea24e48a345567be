import { type Server, STATUS_CODES } from 'node:http'
import type { Duplex } from 'node:stream'
import type { Logger } from 'pino'
import { errorNameOf } from './http-errors.ts'

// Requests that never reach Fastify's routes, answered in the API's error shape anyway:
// CONNECT (Node destroys its socket unanswered when no 'connect' listener is set) and
// requests Node's parser refuses (an unknown method such as FROBNICATE, a malformed line).

function endWith(socket: Duplex, status: number, message: string, headers = ''): void {
  const body = JSON.stringify({ error: errorNameOf(status), message })
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${headers}` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  )
}

export function answerConnect(server: Server, logger: Logger): void {
  server.on('connect', (_req, socket: Duplex) => {
    socket.on('error', (err) => logger.debug({ err }, 'CONNECT socket error'))
    endWith(
      socket,
      405,
      'CONNECT is not supported: this is not a proxy',
      'Allow: GET, HEAD, POST, OPTIONS\r\n',
    )
  })
}

const CLIENT_ERRORS: Record<string, [number, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'request headers are too large'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'request timed out'],
}

export function clientErrorHandler(err: Error & { code?: string }, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed || !socket.writable) {
    socket.destroy()
    return
  }
  const [status, message] = CLIENT_ERRORS[err.code ?? ''] ?? [
    400,
    'the request could not be parsed as HTTP/1.1 (unknown method or malformed request line)',
  ]
  endWith(socket, status, message)
}
