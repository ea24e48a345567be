import { cborDecodeMulti, cborEncode } from '@atproto/common'
import { type RelayProxy, startRelayProxy } from './ws-proxy.ts'

export type HostileRelay = Omit<RelayProxy, 'broadcast'>

/** What to change in the frame of a given upstream seq: its seq, its time. */
export type FrameRewrite = Map<number, { seq?: number; time?: string }>

/**
 * A subscribeRepos pass-through that lies about some frames: the seq (a huge one, one going
 * backwards) or the time, the parts a relay adds outside the signed commit. Every connection
 * gets the same lies, as from a consistently hostile or broken relay.
 */
export async function startHostileRelay(
  upstream: string,
  rewrite: FrameRewrite,
): Promise<HostileRelay> {
  return startRelayProxy(
    upstream,
    ({ client }) =>
      (data) =>
        client.send(rewriteFrame(data, rewrite), { binary: true }),
  )
}

function rewriteFrame(data: Buffer, rewrite: FrameRewrite): Buffer {
  const [header, body] = cborDecodeMulti(new Uint8Array(data)) as [unknown, Record<string, unknown>]
  const change = typeof body?.seq === 'number' ? rewrite.get(body.seq) : undefined
  if (!change) return data
  const out = { ...body, ...change }
  return Buffer.concat([cborEncode(header), cborEncode(out)])
}
