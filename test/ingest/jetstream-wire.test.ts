import { afterEach, describe, expect, it } from 'vitest'
import { startJetstreamServer } from '../../demo-network/jetstream-server.ts'
import { startJetstreamV2Server } from '../../demo-network/jetstream-v2-server.ts'
import { loadConfig } from '../../src/config/config.ts'
import { jetstreamSourceFor, wireOf, wireUrls } from '../../src/ingest/jetstream/wire.ts'
import { seqCursor } from '../../src/model/cursor.ts'
import { captureLogger, collectingSink, testMetrics, until } from '../helpers/ingest-kit.ts'
import { commit } from '../helpers/jetstream-json.ts'

// SPEC 5: a JETSTREAM_URL with no path tries v2 first and falls back to v1 on a 404.

const cleanups: Array<() => unknown> = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

function sourceFor(url: string) {
  const { logger, logs } = captureLogger()
  const config = loadConfig({}, { JETSTREAM_URL: url, JETSTREAM_ZSTD: 'false' })
  const source = jetstreamSourceFor({ config, logger, metrics: testMetrics() }, async () => null, {
    backoffBaseMs: 10,
  })
  return { source, logs }
}

describe('Jetstream wire selection', () => {
  it('reads the wire from the path', () => {
    expect(wireOf('wss://h/subscribe')).toBe('v1')
    expect(wireOf('wss://h/xrpc/network.bsky.jetstream.subscribeEvents')).toBe('v2')
    expect(wireOf('wss://h')).toBe('auto')
    expect(wireOf('wss://h/')).toBe('auto')
    expect(wireUrls('ws://h:1/?x=1')).toEqual({
      v1: 'ws://h:1/subscribe?x=1',
      v2: 'ws://h:1/xrpc/network.bsky.jetstream.subscribeEvents?x=1',
    })
  })

  it('a bare host that serves v2 gets v2, and its cursor key is the v2 URL', async () => {
    const s = await startJetstreamV2Server()
    cleanups.push(() => s.close())
    const { source } = sourceFor(s.origin)
    expect(source.key).toBe(s.origin)
    // Which stored cursors it may resume from is the wire's to say: none is judged before.
    expect(() => source.resumesFrom).toThrow('before prepare')
    await source.prepare?.(new AbortController().signal)
    expect(source.key).toBe(s.url)
    expect(source.resumesFrom).toEqual(['seq', 'time_us'])
    const ac = new AbortController()
    const sink = collectingSink()
    const done = source.run(sink, null, ac.signal)
    cleanups.push(() => {
      ac.abort()
      return done
    })
    await until(() => s.connections > 0)
    s.append([commit(1)])
    await sink.waitFor(1)
    expect(sink.items[0].cursor).toEqual(seqCursor(1))
    expect(s.requests.every((r) => r.path.endsWith('subscribeEvents'))).toBe(true)
  })

  it('a bare host that answers 404 there falls back to v1 /subscribe', async () => {
    const s = await startJetstreamServer()
    cleanups.push(() => s.close())
    const origin = s.url.replace(/\/subscribe$/, '')
    const { source, logs } = sourceFor(origin)
    await source.prepare?.(new AbortController().signal)
    expect(source.key).toBe(s.url)
    expect(source.resumesFrom).toEqual(['time_us', 'seq'])
    expect(logs.some((l) => l.wire === 'v1' && l.status === 404)).toBe(true)
  })
})
