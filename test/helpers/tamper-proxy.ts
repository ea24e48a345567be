import { cborDecodeMulti, cborEncode } from '@atproto/common'
import { startRelayProxy } from './ws-proxy.ts'

// A relay in front of the reference PDS that misbehaves on request, the way the indigo relay
// passes broken commits through: it can drop a frame, send it twice, rewrite its body
// (an altered prevData), or send an old frame again later.

export interface DecodedFrame {
  header: { op?: number; t?: string }
  body: Record<string, unknown>
  raw: Buffer
}

/** What to do with a frame a rule picked: `drop`, `twice`, or a rewritten body. */
export type TamperAction = 'drop' | 'twice' | { rewrite: (body: Record<string, unknown>) => void }

export interface TamperRule {
  match: (f: DecodedFrame) => boolean
  action: TamperAction
}

export interface TamperProxy {
  url: string
  /** One-shot: the first frame matching `match` gets `action`; resolves with that frame. */
  once(match: TamperRule['match'], action: TamperAction): Promise<DecodedFrame>
  /** Every frame passed on so far (the newest 1,000). */
  seen: DecodedFrame[]
  /** Sends a frame (an old one, replayed) to every client now. */
  inject(raw: Buffer): void
  close(): Promise<void>
}

export function decodeFrame(raw: Buffer): DecodedFrame {
  const [header, body] = cborDecodeMulti(new Uint8Array(raw)) as [
    DecodedFrame['header'],
    Record<string, unknown>,
  ]
  return { header, body, raw }
}

export async function startTamperProxy(upstream: string): Promise<TamperProxy> {
  const rules: Array<TamperRule & { done: (f: DecodedFrame) => void }> = []
  const seen: DecodedFrame[] = []
  const proxy = await startRelayProxy(upstream, ({ client }) => (data) => {
    const f = decodeFrame(data)
    const i = rules.findIndex((r) => r.match(f))
    const rule = i >= 0 ? rules.splice(i, 1)[0] : null
    let out: Buffer[] = [data]
    if (rule?.action === 'drop') out = []
    else if (rule?.action === 'twice') out = [data, data]
    else if (rule) {
      rule.action.rewrite(f.body)
      out = [Buffer.concat([cborEncode(f.header), cborEncode(f.body)])]
    }
    rule?.done(f)
    seen.push(f)
    if (seen.length > 1000) seen.shift()
    for (const o of out) client.send(o, { binary: true })
  })
  return {
    url: proxy.url,
    seen,
    once: (match, action) =>
      new Promise<DecodedFrame>((done) => {
        rules.push({ match, action, done })
      }),
    inject: proxy.broadcast,
    close: proxy.close,
  }
}
