import type { Server } from 'node:http'
import type { Duplex } from 'node:stream'
import type { Logger } from 'pino'
import { errorNameOf } from './http-errors.ts'

// Node hands CONNECT to the server's 'connect' event instead of the request handler, and
// with no listener it destroys the socket: the client gets no answer at all. This proxy-less
// server never tunnels, so CONNECT gets the same JSON error shape as any other bad method.

const BODY = JSON.stringify({
  error: errorNameOf(405),
  message: 'CONNECT is not supported: this is not a proxy',
})

export function answerConnect(server: Server, logger: Logger): void {
  server.on('connect', (_req, socket: Duplex) => {
    socket.on('error', (err) => logger.debug({ err }, 'CONNECT socket error'))
    socket.end(
      'HTTP/1.1 405 Method Not Allowed\r\n' +
        'Allow: GET, HEAD, POST, OPTIONS\r\n' +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(BODY)}\r\n` +
        'Connection: close\r\n\r\n' +
        BODY,
    )
  })
}

const CLIENT_ERRORS: Record<string, [number, string, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large', 'request headers are too large'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', 'request timed out'],
}

/**
 * Requests Node's parser refuses (an unknown method such as FROBNICATE, a malformed line)
 * never reach Fastify's routes: answer them in the API's error shape instead of Fastify's.
 */
export function clientErrorHandler(err: Error & { code?: string }, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed || !socket.writable) {
    socket.destroy()
    return
  }
  const [status, text, message] = CLIENT_ERRORS[err.code ?? ''] ?? [
    400,
    'Bad Request',
    'the request could not be parsed as HTTP/1.1 (unknown method or malformed request line)',
  ]
  const body = JSON.stringify({ error: errorNameOf(status), message })
  socket.end(
    `HTTP/1.1 ${status} ${text}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  )
}
