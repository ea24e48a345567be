import type { IncomingMessage } from 'node:http'
import { XRPCError } from '@atproto/xrpc'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Database } from '../../src/db/client.ts'
import { ALICE, makeApp, type Seeded, seed } from '../api/fixtures.ts'
import { createTestDatabase } from '../helpers/db.ts'
import { startNetwork, type TestAccount, type TestNetwork } from '../helpers/network.ts'
import { freePort } from '../helpers/node-child.ts'
import { AtpBaseClient } from '../xrpc-client/index.ts'

// An atproto client reaches this AppView through its own PDS: the reference PDS resolves
// `atproto-proxy: did:web:localhost%3A<port>#prompt_appview` to the DID document this
// process serves (SERVICE_DID), and forwards the call with a service-auth JWT it mints.

let net: TestNetwork
let db: Database
let app: FastifyInstance
let s: Seeded
let user: TestAccount
let serviceDid: string
let appUrl: string
/** What the AppView received on /xrpc/: the PDS's forwarded requests. */
const received: Array<{ url: string; authorization?: string }> = []

beforeAll(async () => {
  net = await startNetwork()
  user = await net.createAccount('dana')
  db = await createTestDatabase()
  s = await seed(db)
  const port = await freePort()
  serviceDid = `did:web:localhost%3A${port}`
  app = await makeApp(db, { SERVICE_DID: serviceDid })
  app.server.on('request', (req: IncomingMessage) => {
    if (req.url?.startsWith('/xrpc/'))
      received.push({ url: req.url, authorization: req.headers.authorization })
  })
  // 'localhost' binds every address it resolves to, as the PDS may dial either.
  await app.listen({ host: 'localhost', port })
  appUrl = `http://localhost:${port}`
}, 120_000)
afterAll(async () => {
  await app?.close()
  await db?.close()
  await net?.close()
})

/** The generated client, logged in as `user` at the PDS, asking it to proxy to us. */
function throughPds() {
  return new AtpBaseClient({
    service: net.pdsUrl,
    headers: {
      authorization: `Bearer ${user.agent.session?.accessJwt}`,
      'atproto-proxy': `${serviceDid}#prompt_appview`,
    },
  }).xyz.quasigod.lab.letta.appview
}

const payloadOf = (jwt: string) =>
  JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString('utf8')) as Record<
    string,
    unknown
  >

describe('XRPC through the reference PDS (atproto-proxy)', () => {
  it('the DID document names the #prompt_appview service at the loopback endpoint', async () => {
    const doc = (await (await fetch(`${appUrl}/.well-known/did.json`)).json()) as {
      service: unknown
    }
    expect(doc.service).toEqual([
      { id: '#prompt_appview', type: 'PromptAppView', serviceEndpoint: appUrl },
    ])
  })

  it('a logged-in user gets the REST answer, and the PDS signed the forwarded call', async () => {
    const rkey = s.alice.recompiled
    const want = await (await fetch(`${appUrl}/v1/prompts/${ALICE}/${rkey}`)).json()
    received.length = 0
    const got = await throughPds().getPrompt({ did: ALICE, rkey })
    expect(got.data).toEqual(want)
    // It came from the PDS (the client never called us), with a service-auth JWT: issued by
    // the user, for this service and this method. Reads are public, so it is not verified.
    expect(received).toHaveLength(1)
    const auth = received[0].authorization ?? ''
    expect(auth).toMatch(/^Bearer /)
    const claims = payloadOf(auth.slice('Bearer '.length))
    expect(claims).toMatchObject({
      iss: user.did,
      aud: serviceDid,
      lxm: 'xyz.quasigod.lab.letta.appview.getPrompt',
    })
  })

  it('errors come back through the proxy in the XRPC shape', async () => {
    const xrpc = throughPds()
    for (const [call, name] of [
      [() => xrpc.listPrompts({ limit: 0 }), 'InvalidRequest'],
      [() => xrpc.getPrompt({ did: ALICE, rkey: s.w.tid() }), 'NotFound'],
    ] as const) {
      const err = await call().then(
        () => null,
        (e: unknown) => e,
      )
      expect(err).toBeInstanceOf(XRPCError)
      expect((err as XRPCError).error).toBe(name)
    }
  })
})
