import type { AddressInfo } from 'node:net'
import { connect } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Database } from '../../src/db/client.ts'
import { createTestDatabase } from '../helpers/db.ts'
import { makeApp } from './fixtures.ts'

// Over a raw socket, since `inject` never reaches Node's 'connect' path: every method gets
// an HTTP answer with the JSON error shape, never a dropped connection.

let db: Database
let app: FastifyInstance
let port: number

beforeAll(async () => {
  db = await createTestDatabase()
  app = await makeApp(db)
  await app.listen({ host: '127.0.0.1', port: 0 })
  port = (app.server.address() as AddressInfo).port
})
afterAll(async () => {
  await app?.close()
  await db?.close()
})

/** Sends `request` as is and returns all the server wrote before it closed (or 2 s passed). */
function raw(request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let got = ''
    const timer = setTimeout(() => {
      socket.destroy()
      resolve(got)
    }, 2000)
    socket.setEncoding('utf8')
    socket.on('data', (d) => {
      got += d
    })
    socket.on('error', reject)
    socket.on('close', () => {
      clearTimeout(timer)
      resolve(got)
    })
    socket.write(request)
  })
}

function parse(response: string) {
  const [head, body = ''] = response.split('\r\n\r\n')
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0)
  return {
    status,
    head,
    json: body ? JSON.parse(body.replace(/^[0-9a-f]+\r\n|\r\n0\r\n$/g, '')) : null,
  }
}

describe('methods the API does not route', () => {
  it('CONNECT gets a 405 with the JSON error shape, not a dropped socket', async () => {
    const r = parse(await raw('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'))
    expect(r.status).toBe(405)
    expect(r.head).toMatch(/content-type: application\/json/i)
    expect(r.json).toEqual({ error: 'InvalidRequest', message: expect.stringMatching(/CONNECT/) })
  })

  it.each(['TRACE', 'PROPFIND', 'PATCH', 'DELETE', 'PUT', 'SEARCH'])(
    '%s gets a 4xx JSON error',
    async (method) => {
      const r = parse(
        await raw(`${method} /v1/stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`),
      )
      expect(r.status).toBeGreaterThanOrEqual(400)
      expect(r.status).toBeLessThan(500)
      expect(r.json).toMatchObject({ error: expect.any(String), message: expect.any(String) })
    },
  )

  it('a method Node cannot parse gets a 400, not a dropped socket', async () => {
    const r = parse(await raw('FROBNICATE /v1/stats HTTP/1.1\r\nHost: x\r\n\r\n'))
    expect(r.status).toBe(400)
    expect(r.json).toMatchObject({ error: 'InvalidRequest' })
  })
})
