import type { FastifyInstance } from 'fastify'
import type { Config } from '../../config/config.ts'

// SERVICE_DID (a did:web) makes this process its own DID document's host, so a PDS can proxy
// `atproto-proxy: <did>#prompt_appview` calls here; their service-auth JWT is not verified,
// since every query is a public read and it would grant nothing.

/** PUBLIC_URL, or the did:web's own host: https, or http for a loopback host. */
function serviceEndpointOf(config: Pick<Config, 'serviceDid' | 'publicUrl'>): string {
  if (config.publicUrl) return config.publicUrl
  const host = decodeURIComponent((config.serviceDid ?? '').slice('did:web:'.length))
  const name = new URL(`http://${host}`).hostname
  const loopback = name === 'localhost' || name === '127.0.0.1' || name === '[::1]'
  return `${loopback ? 'http' : 'https'}://${host}`
}

/** GET /.well-known/did.json, when SERVICE_DID is set: the service a PDS proxies to. */
export async function serveDidDocument(app: FastifyInstance): Promise<void> {
  const { config } = app.ctx
  if (!config.serviceDid) return
  const body = JSON.stringify({
    '@context': ['https://www.w3.org/ns/did/v1'],
    id: config.serviceDid,
    service: [
      { id: '#prompt_appview', type: 'PromptAppView', serviceEndpoint: serviceEndpointOf(config) },
    ],
  })
  app.get(
    '/.well-known/did.json',
    {
      config: { cache: { maxAge: 300 } },
      schema: {
        tags: ['xrpc'],
        summary: `DID document of ${config.serviceDid}: the #prompt_appview service a PDS proxies XRPC calls to`,
      },
    },
    async (_request, reply) => reply.type('application/json; charset=utf-8').send(body),
  )
}
