import type { FastifyInstance } from 'fastify'
import type { Config } from '../../config/config.ts'

// SERVICE_DID (a did:web) makes this process its own DID document's host: a PDS resolves
// `atproto-proxy: <did>#prompt_appview` to the document's service entry and forwards the
// user's XRPC call to its endpoint, signed with a service-auth JWT. Every query here is a
// public read, so that JWT is accepted and not verified: it would grant nothing.

/** The fragment a PDS is told to proxy to: `atproto-proxy: <SERVICE_DID>#prompt_appview`. */
export const SERVICE_ID = '#prompt_appview'
export const SERVICE_TYPE = 'PromptAppView'

/** PUBLIC_URL, or the did:web's own host: https, or http for a loopback host. */
export function serviceEndpointOf(config: Pick<Config, 'serviceDid' | 'publicUrl'>): string {
  if (config.publicUrl) return config.publicUrl
  const host = decodeURIComponent((config.serviceDid ?? '').slice('did:web:'.length))
  const name = new URL(`http://${host}`).hostname
  const loopback = name === 'localhost' || name === '127.0.0.1' || name === '[::1]'
  return `${loopback ? 'http' : 'https'}://${host}`
}

export function didDocumentOf(config: Pick<Config, 'serviceDid' | 'publicUrl'>) {
  return {
    '@context': ['https://www.w3.org/ns/did/v1'],
    id: config.serviceDid,
    service: [{ id: SERVICE_ID, type: SERVICE_TYPE, serviceEndpoint: serviceEndpointOf(config) }],
  }
}

/** GET /.well-known/did.json, when SERVICE_DID is set. */
export async function serveDidDocument(app: FastifyInstance): Promise<void> {
  const { config } = app.ctx
  if (!config.serviceDid) return
  const body = JSON.stringify(didDocumentOf(config))
  app.get(
    '/.well-known/did.json',
    {
      config: { cache: { maxAge: 300 } },
      schema: {
        tags: ['xrpc'],
        summary: `DID document of ${config.serviceDid}: the ${SERVICE_ID} service a PDS proxies XRPC calls to`,
      },
    },
    async (_request, reply) => reply.type('application/json; charset=utf-8').send(body),
  )
}
