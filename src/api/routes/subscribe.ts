import type { WebsocketPluginOptions } from '@fastify/websocket'
import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import { withTimeout } from '../../faults/timers.ts'
import type { ChangeFeed } from '../changes/feed.ts'
import { type Admitted, type ChangeHub, CLOSE } from '../changes/hub.ts'
import { errorNameOf, errorResponses } from '../http-errors.ts'
import { INCLUDE_PARAM, parseInclude, SINCE } from '../params.ts'

// GET /v1/changes/subscribe (SPEC 13): the change feed as a WebSocket. Whatever can be
// refused is refused before the upgrade, as an HTTP answer in the API's error shape.

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the subscription route's admission (before the upgrade), read by its handler. */
    subscription: Admitted | null
  }
}

/** How long a closing app waits for subscribers to answer its close before cutting them. */
const CLOSE_GRACE_MS = 1_000

/** On close, subscribers that do not answer the 1001 in time are cut: a SIGTERM never waits. */
export const websocketOptions: WebsocketPluginOptions = {
  // closeTimeout (ws 8.19+, not yet in @types/ws): how long a closed socket waits for the
  // peer's close frame before it is destroyed.
  options: { maxPayload: 4096, closeTimeout: 10_000 } as WebsocketPluginOptions['options'],
  errorHandler(error, socket, request) {
    request.log.debug({ err: error }, 'change subscription socket error')
    socket.terminate()
  },
  async preClose(this: FastifyInstance) {
    const open = [...this.websocketServer.clients]
    for (const ws of open) ws.close(CLOSE.goingAway, 'server shutting down')
    const closed = open.map((ws) => new Promise((resolve) => ws.once('close', resolve)))
    await withTimeout(Promise.all(closed), CLOSE_GRACE_MS, () => {})
    for (const ws of open) ws.terminate()
    await new Promise((resolve) => this.websocketServer.close(resolve))
  },
}

export const subscribeRoutes: FastifyPluginAsync<{ hub: ChangeHub; feed: ChangeFeed }> = async (
  app,
  { hub, feed },
) => {
  const { options } = hub
  // What admission found travels on the request to the socket handler, after the upgrade.
  app.decorateRequest('subscription', null)

  app.route<{ Querystring: { since?: string; include?: string } }>({
    method: 'GET',
    url: '/v1/changes/subscribe',
    schema: {
      tags: ['changes'],
      summary: 'Live change feed (WebSocket)',
      description: `A WebSocket (connect with Upgrade: websocket). The backlog after since, then each change as it commits, in seq order: one JSON text frame per change, the same object as a line of /v1/changes (with include=record, the record too). Resume with since = the last seq received. A subscriber holding more than ${options.maxUnsentBytes} bytes unsent when new changes arrive gets the frame {"error":"ConsumerTooSlow","message"} and is closed (1008); one that sends anything is closed too. At most ${options.maxSubscribers} subscribers per process: past it, 503 before the upgrade. On shutdown subscribers are closed with 1001. A GET without the upgrade is answered 426.`,
      querystring: {
        type: 'object',
        properties: { since: SINCE.schema, include: INCLUDE_PARAM },
      },
      response: {
        101: { description: 'Switching Protocols: the subscription follows as text frames' },
        ...errorResponses,
      },
    },
    async preHandler(request, reply) {
      const since = SINCE.parse(request.query.since)
      const withRecords = parseInclude(request.query.include)
      if (!request.ws) return // the handler says how to ask
      const release = hub.admit()
      if (!release)
        return reply
          .status(503)
          .header('retry-after', '5')
          .send({
            error: errorNameOf(503),
            message: `too many subscribers on this server (${options.maxSubscribers}): try again shortly`,
          })
      // Whatever happens to the request from here (an error answer, a failed handshake, the
      // end of the subscription), its place is given back when its socket closes.
      request.raw.socket.once('close', release)
      try {
        // Read before the upgrade, as the feed reads before its status: a database that is
        // down is a 503 the client can act on, not a socket that opens and closes.
        const first = await feed.read(since, feed.chunkSize(withRecords), withRecords)
        request.subscription = { since, withRecords, first, release }
      } catch (err) {
        release()
        throw err
      }
    },
    wsHandler(socket, request) {
      const a = request.subscription
      if (!a) return void socket.close(CLOSE.internal, 'not admitted')
      request.subscription = null
      hub.subscribe(socket, a)
    },
    async handler(_request, reply) {
      return reply
        .status(426)
        .header('upgrade', 'websocket')
        .send({
          error: errorNameOf(426),
          message:
            'this is a WebSocket endpoint: connect with Upgrade: websocket (or read /v1/changes for one page)',
        })
    },
  })
}
