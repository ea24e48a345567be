import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

// A PLC directory on loopback serving a DID document for each known DID (its atproto
// signing key as a Multikey) and 404 for the rest: both DID resolvers under test fetch
// from it once per DID and then answer from their caches, with no network involved.

export async function startPlcStub(
  keys: Record<string, string>,
  /** false: documents name no handle, so a product checks none (no DNS lookups). */
  o: { handles?: boolean } = {},
): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    const did = decodeURIComponent((req.url ?? '/').slice(1))
    const key = keys[did]
    if (!key) return void res.writeHead(404).end('{"message":"DID not registered"}')
    const doc = {
      '@context': ['https://www.w3.org/ns/did/v1', 'https://w3id.org/security/multikey/v1'],
      id: did,
      alsoKnownAs: o.handles === false ? [] : [`at://${did.slice(8, 16)}.bench.test`],
      verificationMethod: [
        {
          id: `${did}#atproto`,
          type: 'Multikey',
          controller: did,
          publicKeyMultibase: key.replace(/^did:key:/, ''),
        },
      ],
      service: [
        {
          id: '#atproto_pds',
          type: 'AtprotoPersonalDataServer',
          serviceEndpoint: 'http://127.0.0.1:1',
        },
      ],
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(doc))
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections()
        server.close(() => r())
      }),
  }
}
