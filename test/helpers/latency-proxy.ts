import { type AddressInfo, connect, createServer, type Socket } from 'node:net'

// A TCP pass-through between a product process and its Postgres that makes the database
// slow rather than gone: every chunk, either way, waits `latencyMs` before it is passed on,
// in order. Set the latency at any moment (0: a plain pipe again); nothing is dropped.

export interface LatencyProxy {
  readonly port: number
  /** The database URL `url` with its host and port replaced by the proxy's. */
  urlFor(url: string): string
  setLatency(ms: number): void
  close(): Promise<void>
}

export async function startLatencyProxy(target: { host: string; port: number }) {
  let latency = 0
  const sockets = new Set<Socket>()
  const server = createServer((client) => {
    const upstream = connect(target.port, target.host)
    for (const s of [client, upstream]) {
      sockets.add(s)
      s.on('close', () => sockets.delete(s))
      s.on('error', () => {
        client.destroy()
        upstream.destroy()
      })
    }
    pipeSlowly(client, upstream, () => latency)
    pipeSlowly(upstream, client, () => latency)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  const proxy: LatencyProxy = {
    port,
    urlFor(url) {
      const u = new URL(url)
      u.hostname = '127.0.0.1'
      u.port = String(port)
      return u.toString()
    },
    setLatency(ms) {
      latency = ms
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
  return proxy
}

/** Forwards `from` to `to`, each chunk after the latency in force when it arrived, in order. */
function pipeSlowly(from: Socket, to: Socket, latency: () => number): void {
  let chain = Promise.resolve()
  from.on('data', (chunk) => {
    const wait = latency()
    chain = chain.then(async () => {
      if (wait > 0) await new Promise((r) => setTimeout(r, wait))
      if (!to.destroyed) to.write(chunk)
    })
  })
  from.on('end', () => {
    chain = chain.then(() => void to.end())
  })
}
